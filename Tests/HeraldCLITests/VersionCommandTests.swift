import Foundation
import HeraldWorker
import Testing

@Suite("herald --version")
struct VersionCommandTests {
    @Test(
        "prints Herald's version and the versions of the librdkafka, SQLite and ICU it runs with, as the system has them"
    )
    func version() async throws {
        let herald = try heraldExecutable().path
        let printed = try await run(herald, ["--version"])
        #expect(printed.status == 0, "\(printed.error)")
        // The libraries' versions from another source than the process itself: pkg-config reads the
        // -dev packages' files, which Debian ships at the runtime libraries' versions.
        let pkgConfig = try await run("/usr/bin/pkg-config", ["--modversion", "rdkafka", "sqlite3", "icu-uc"])
        try #require(pkgConfig.status == 0, "pkg-config: \(pkgConfig.error)")
        let versions = pkgConfig.output.split(separator: "\n").map(String.init)
        try #require(versions.count == 3, "pkg-config printed \(pkgConfig.output)")
        let line = try #require(printed.output.split(separator: "\n").first.map(String.init))
        #expect(printed.output.split(separator: "\n").count == 1, "one line: \(printed.output)")
        let match = try #require(
            line.wholeMatch(
                of: /(\d+\.\d+\.\d+) \(librdkafka ([^,]+), SQLite ([^,]+), ICU ([^,]+), CLDR (\d+(?:\.\d+)*)\)/
            ),
            "unexpected: \(line)"
        )
        #expect(String(match.output.2) == versions[0], "librdkafka")
        #expect(String(match.output.3) == versions[1], "SQLite")
        #expect(String(match.output.4) == versions[2], "ICU")
        // Dead letters carry the same version in `herald.version`.
        #expect(String(match.output.1) == DeadLetter.heraldVersion)
    }
}
