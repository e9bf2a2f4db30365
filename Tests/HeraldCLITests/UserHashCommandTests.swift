import Foundation
import Testing

@Suite("herald user-hash")
struct UserHashCommandTests {
    @Test("prints each id's hash with the configured key, as the logs show it; a short key is refused, naming the key")
    func userHash() async throws {
        let herald = try heraldExecutable().path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-hash-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func write(_ name: String, _ text: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let key = try write("key", "0123456789abcdef-log-key")
        let config = try write("herald.yaml", "log:\n  user_hash_key_file: \(key)\n")
        let keyed = try await run(herald, ["user-hash", "--config", config, "u-1024", "u-7"])
        #expect(keyed.status == 0, "\(keyed.error)")
        // HMAC-SHA256 of the id with the key, its first 6 bytes (Python's hmac module).
        #expect(keyed.output.split(separator: "\n").first == "u:6E4E8E425918\tu-1024")
        #expect(keyed.output.split(separator: "\n").count == 2)
        // Without ids on the command line, from standard input: a list of 20,000 (CRLF or LF, blank
        // lines skipped), each as it would be one at a time.
        let listed = (0..<20_000).map { "u-\($0)" }
        let piped = try await run(
            herald,
            ["user-hash", "--config", config],
            input: "u-1024\r\n\n" + listed.joined(separator: "\n") + "\n"
        )
        #expect(piped.status == 0, "\(piped.error)")
        let lines = piped.output.split(separator: "\n")
        #expect(lines.count == 20_001)
        #expect(lines.first == "u:6E4E8E425918\tu-1024")
        #expect(lines.dropFirst().compactMap { $0.split(separator: "\t").last.map(String.init) } == listed)
        #expect(lines.contains(keyed.output.split(separator: "\n")[1]), "u-7 hashed as on the command line")
        let unkeyed = try await run(herald, ["user-hash", "u-1024"])
        #expect(unkeyed.status == 0 && unkeyed.output.hasPrefix("u:") && !unkeyed.output.hasPrefix("u:6E4E8E425918"))

        let short = try write("short", "short-secret")
        let refused = try await run(
            herald,
            ["user-hash", "--config", try write("short.yaml", "log:\n  user_hash_key_file: \(short)\n"), "u-1"]
        )
        #expect(refused.status == 78)
        #expect(refused.error.contains("log.user_hash_key_file") && !refused.error.contains("short-secret"))
    }
}
