import Foundation
import HeraldStore
import HeraldTestSupport
import Logging
import Testing

/// The PostgreSQL store over TLS to a server that refuses plain connections, with a certificate
/// from an authority of its own, as managed databases have.
@Suite("PostgreSQL over TLS")
struct PostgresTLSTests {
    let scratch = ScratchDirectory()

    /// Whether a store made from `url` answers a query within `timeout` (a migration would wait
    /// minutes for a server it cannot reach). A connection that should work gets long enough for
    /// a loaded machine (the test suite runs in parallel); one that should be refused gets a few
    /// seconds, plenty for a refusal, which comes at once.
    func connects(_ url: String, within timeout: Duration = .seconds(30)) async throws -> Bool {
        var configuration = try PostgresStore.Configuration(url: url)
        configuration.callTimeout = timeout
        var logger = Logger(label: "herald.test.postgres.tls")
        logger.logLevel = .critical
        let store = PostgresStore(configuration: configuration, logger: logger)
        return try await withRunningServices([store]) {
            do {
                return try await store.schemaVersion() == 0
            } catch {
                return false
            }
        }
    }

    @Test("sslrootcert trusts a private authority; the host name is checked unless verify-ca; plain TCP is refused")
    func privateAuthority() async throws {
        // The certificate names `localhost` only, not 127.0.0.1.
        let certificates = try TestCertificates.make(commonName: "localhost", dnsNames: ["localhost"])
        let cluster = try await PostgresTestCluster.makeOwn(tls: certificates)
        defer { cluster.destroy() }
        let database = try await cluster.makeDatabase().database
        let authority = try scratch.file("root.crt", certificates.authorityPEM)
        func url(_ host: String, _ query: String) -> String {
            "postgres://\(cluster.username)@\(host):\(cluster.port)/\(database)?\(query)"
        }

        #expect(try await connects(url("localhost", "sslmode=verify-full&sslrootcert=\(authority)")))
        #expect(
            try await connects(url("127.0.0.1", "sslmode=verify-ca&sslrootcert=\(authority)")),
            "verify-ca: the chain, not the name"
        )
        #expect(
            try await !connects(url("127.0.0.1", "sslmode=verify-full&sslrootcert=\(authority)"), within: refusal),
            "the certificate does not name 127.0.0.1"
        )
        #expect(
            try await !connects(url("localhost", "sslmode=require"), within: refusal),
            "the system's authorities do not know this one"
        )
        #expect(
            try await !connects(url("localhost", "sslmode=disable"), within: refusal),
            "the server refuses plain TCP"
        )
        // This server takes TLS only: connecting at all shows the connection was encrypted.
        for query in ["sslmode=prefer", "sslmode=allow", ""] {
            #expect(try await connects(url("127.0.0.1", query)), "'\(query)' encrypts, unverified, as libpq")
        }
    }

    @Test("sslmode=prefer, and no sslmode, fall back to plain TCP when the server has no TLS")
    func preferPlain() async throws {
        let cluster = try await PostgresTestCluster.shared()
        let database = try await cluster.makeDatabase().database
        for query in ["sslmode=prefer", ""] {
            let url = "postgres://\(cluster.username)@127.0.0.1:\(cluster.port)/\(database)?\(query)"
            #expect(try await connects(url), "'\(query)'")
        }
    }

    let refusal = Duration.seconds(5)

    @Test("a TLS setting that cannot work is refused when the URL is read")
    func badSettings() throws {
        for (query, expected) in [
            ("sslmode=verify-full&sslrootcert=/no/such/root.crt", "sslrootcert: cannot read /no/such/root.crt"),
            ("sslmode=sometimes", "sslmode must be disable, allow, prefer, require, verify-ca or verify-full"),
            ("sslmode=prefer&sslrootcert=\(try scratch.file("root.crt", "x"))", "sslrootcert needs sslmode require"),
            ("sslrootcert=\(try scratch.file("root.crt", "x"))", "sslrootcert needs sslmode require"),
        ] {
            do {
                _ = try PostgresStore.Configuration(url: "postgres://herald:s3cret@db:5432/herald?\(query)")
                Issue.record("accepted \(query)")
            } catch {
                #expect(error.message.contains(expected), "\(error.message)")
                #expect(!error.message.contains("s3cret"))
            }
        }
        let verifyCA = try PostgresStore.Configuration(url: "postgres://herald@db/herald?sslmode=verify-ca")
        #expect(verifyCA.tlsMode == .require && !verifyCA.verifiesHostName && verifyCA.rootCertificatesFile == nil)
        for (query, mode) in [
            ("", PostgresStore.TLSMode.prefer), ("sslmode=prefer", .prefer), ("sslmode=allow", .prefer),
            ("sslmode=disable", .disable), ("sslmode=require", .require), ("sslmode=verify-full", .require),
        ] {
            #expect(try PostgresStore.Configuration(url: "postgres://herald@db/herald?\(query)").tlsMode == mode)
        }
    }
}
