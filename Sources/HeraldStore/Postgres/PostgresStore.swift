import Foundation
import HeraldEvents
import HeraldPolicy
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Herald's state in PostgreSQL, shared by any number of workers.
///
/// A `Service`: run it (in the application's `ServiceGroup`, or with ``run()`` in a task) for its
/// connection pool to work, then call ``migrate()`` once before anything else. Every batch is one
/// round trip: directory changes and decision plans are sent as one JSON array to a server-side
/// function that applies them under row locks.
public final class PostgresStore: StateStore, Service {
    /// Where the database is. The password never appears in descriptions or errors.
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String?
        public var database: String
        /// Whether and how the connection is encrypted (`sslmode`).
        public var tlsMode: TLSMode
        /// `sslrootcert`: a PEM file of the authorities the server's certificate chains to, instead
        /// of the system's: managed databases (Amazon RDS, Cloud SQL, Azure) sign with their own.
        public var rootCertificatesFile: String?
        /// Whether the certificate must name the host connected to: off for `sslmode=verify-ca`
        /// (a server reached by an address its certificate does not list).
        public var verifiesHostName = true
        public var maximumConnections: Int
        /// How long one store call may take, waiting for a connection included, before it fails
        /// with ``StoreError`` `.storeOpen`. postgres-nio's pool waits for a connection for as long
        /// as the server is unreachable; without this limit a worker would wait on its batch in
        /// silence, still reporting itself ready. Migrations and purges get longer.
        public var callTimeout: Duration = .seconds(10)
        /// The most devices kept for one user (``DirectoryLimits/maximumDevicesPerUser``).
        public var maximumDevicesPerUser = DirectoryLimits.maximumDevicesPerUser

        public init(
            host: String,
            port: Int = 5432,
            username: String,
            password: String? = nil,
            database: String,
            tlsMode: TLSMode = .disable,
            maximumConnections: Int = 8
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.tlsMode = tlsMode
            self.maximumConnections = maximumConnections
        }

        /// Reads a `postgres://user[:password]@host[:port]/database` URL, with optional
        /// `sslmode=disable|allow|prefer|require|verify-ca|verify-full` (``TLSMode``; `prefer`
        /// without one, as libpq) and `sslrootcert=PATH`.
        ///
        /// - Throws: ``StoreError`` `.storeOpen`, naming what is wrong but not repeating the URL
        ///   (it may hold a password).
        public init(url: String) throws(StoreError) {
            guard let components = URLComponents(string: url),
                components.scheme == "postgres" || components.scheme == "postgresql"
            else {
                throw StoreError(code: .storeOpen, message: "the PostgreSQL URL must look like postgres://user@host/db")
            }
            guard let host = components.host, !host.isEmpty else {
                throw StoreError(code: .storeOpen, message: "the PostgreSQL URL has no host")
            }
            guard let user = components.user, !user.isEmpty else {
                throw StoreError(code: .storeOpen, message: "the PostgreSQL URL has no user name")
            }
            let database = String(components.path.drop { $0 == "/" })
            guard !database.isEmpty else {
                throw StoreError(code: .storeOpen, message: "the PostgreSQL URL has no database name")
            }
            // libpq's default: a URL copied from a libpq setup keeps the encryption it had there.
            var tlsMode = TLSMode.prefer
            var verifiesHostName = true
            var rootCertificatesFile: String?
            for item in components.queryItems ?? [] {
                switch (item.name, item.value) {
                case ("sslmode", "disable"?): tlsMode = .disable
                // postgres-nio cannot try plain TCP first and TLS after, as libpq's `allow` does;
                // TLS first connects to every server `allow` connects to.
                case ("sslmode", "prefer"?), ("sslmode", "allow"?): tlsMode = .prefer
                case ("sslmode", "require"?), ("sslmode", "verify-full"?): tlsMode = .require
                case ("sslmode", "verify-ca"?):
                    tlsMode = .require
                    verifiesHostName = false
                case ("sslmode", _):
                    throw StoreError(
                        code: .storeOpen,
                        message: "sslmode must be disable, allow, prefer, require, verify-ca or verify-full"
                    )
                case ("sslrootcert", let path?) where !path.isEmpty:
                    guard FileManager.default.isReadableFile(atPath: path) else {
                        throw StoreError(code: .storeOpen, message: "sslrootcert: cannot read \(path)")
                    }
                    rootCertificatesFile = path
                default: break
                }
            }
            if rootCertificatesFile != nil && tlsMode != .require {
                throw StoreError(
                    code: .storeOpen,
                    message: "sslrootcert needs sslmode require, verify-ca or verify-full"
                )
            }
            self.init(
                host: host,
                port: components.port ?? 5432,
                username: user,
                password: components.password,
                database: database,
                tlsMode: tlsMode
            )
            self.verifiesHostName = verifiesHostName
            self.rootCertificatesFile = rootCertificatesFile
        }
    }

    /// How a connection is encrypted.
    public enum TLSMode: Sendable, Equatable {
        /// Plain TCP (`sslmode=disable`), for loopback and private networks.
        case disable
        /// TLS if the server offers it, plain TCP if not, and the certificate not verified
        /// (`sslmode=prefer` or `allow`, and a URL without `sslmode`): as libpq's `prefer`, this
        /// keeps a passive eavesdropper out, not a server that pretends to be the database.
        case prefer
        /// TLS only, with the server's certificate verified against ``Configuration/rootCertificatesFile``
        /// or the system's authorities, and its host name too unless
        /// ``Configuration/verifiesHostName`` is off (`sslmode=require`, `verify-ca` or
        /// `verify-full`). libpq's `require` encrypts without verifying; Herald does not send a
        /// password over TLS to a server it cannot authenticate.
        case require
    }

    let client: PostgresClient
    let logger: Logger
    /// `host:port/database`, for errors (never the user name or password).
    let endpoint: String
    let callTimeout: Duration
    let maximumDevicesPerUser: Int
    /// Set when ``run()`` starts, so that ``migrate()`` called at the same moment waits for the pool.
    let running = Atomic<Bool>(false)

    public init(configuration: Configuration, logger: Logger = Logger(label: "herald.store.postgres")) {
        var clientConfiguration = PostgresClient.Configuration(
            host: configuration.host,
            port: configuration.port,
            username: configuration.username,
            password: configuration.password,
            database: configuration.database,
            tls: Self.tls(configuration)
        )
        clientConfiguration.options.maximumConnections = configuration.maximumConnections
        self.client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        self.logger = logger
        self.endpoint = "\(configuration.host):\(configuration.port)/\(configuration.database)"
        self.callTimeout = configuration.callTimeout
        self.maximumDevicesPerUser = max(configuration.maximumDevicesPerUser, 1)
    }

    /// The client side of a connection to the server `configuration` names.
    static func tls(_ configuration: Configuration) -> PostgresClient.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch configuration.tlsMode {
        case .disable:
            return .disable
        case .prefer:
            tls.certificateVerification = .none
            return .prefer(tls)
        case .require:
            if let file = configuration.rootCertificatesFile { tls.trustRoots = .file(file) }
            if !configuration.verifiesHostName { tls.certificateVerification = .noHostnameVerification }
            return .require(tls)
        }
    }

    /// Runs the connection pool until cancelled (or the service group shuts down).
    public func run() async {
        running.store(true, ordering: .releasing)
        await client.run()
    }

    /// Brings the schema up to date. Safe to call from many workers starting at once: an advisory
    /// lock lets one migrate while the others wait, then find nothing to do.
    ///
    /// A database a newer Herald migrated past the migrations this one knows is run on only if that
    /// Herald said this one may (``PostgresSchema/compatibleFrom``): workers of one database are
    /// upgraded one by one, and those still running keep working on the newer schema. Otherwise
    /// it is refused, before anything is read or written.
    ///
    /// - Throws: ``StoreError`` `.migration` for a migration that failed, or a newer schema this
    ///   worker must not run on (naming the versions).
    public func migrate() async throws(StoreError) {
        await waitForPool()
        try await storeCall("migration", timeout: .seconds(300)) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                // An arbitrary constant: "herald" in ASCII.
                try await connection.query("SELECT pg_advisory_xact_lock(114 * 256 + 104)", logger: logger)
                try await connection.query(
                    "CREATE TABLE IF NOT EXISTS herald_schema_version (version integer NOT NULL)",
                    logger: logger
                )
                // Not a migration: a worker that knows no migration past the newest must still be
                // able to read what a newer one wrote here. Altered only if it is missing: ALTER
                // TABLE needs the table's owner even when there is nothing to add.
                var hasCompatibleFrom = false
                for try await _ in try await connection.query(
                    """
                    SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                        AND table_name = 'herald_schema_version' AND column_name = 'compatible_from'
                    """,
                    logger: logger
                ) {
                    hasCompatibleFrom = true
                }
                if !hasCompatibleFrom {
                    try await connection.query(
                        "ALTER TABLE herald_schema_version ADD COLUMN compatible_from integer",
                        logger: logger
                    )
                }
                var version = 0
                var compatibleFrom: Int?
                for try await (current, compatible) in try await connection.query(
                    "SELECT version, compatible_from FROM herald_schema_version",
                    logger: logger
                ).decode((Int, Int?).self) {
                    (version, compatibleFrom) = (current, compatible)
                }
                let known = PostgresSchema.migrations.count
                if version > known {
                    try Self.checkNewer(version: version, compatibleFrom: compatibleFrom, known: known)
                    logger.warning(
                        "the PostgreSQL schema is newer than this Herald knows; the Herald that migrated it allows this one",
                        metadata: [
                            "version": "\(version)", "known": "\(known)",
                            "compatible_from": "\(compatibleFrom.map(String.init) ?? "-")",
                        ]
                    )
                }
                guard version < known else { return }
                for (index, sql) in PostgresSchema.migrations.enumerated().dropFirst(version) {
                    for statement in PostgresSchema.statements(sql) {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    logger.info("migrated the PostgreSQL schema", metadata: ["version": "\(index + 1)"])
                }
                try await connection.query("DELETE FROM herald_schema_version", logger: logger)
                try await connection.query(
                    """
                    INSERT INTO herald_schema_version (version, compatible_from)
                    VALUES (\(known), \(PostgresSchema.compatibleFrom))
                    """,
                    logger: logger
                )
            }
        }
    }

    /// Refuses a database at schema `version`, past the `known` migrations, unless the Herald that
    /// migrated it said that workers knowing `compatibleFrom` may run on it. A database without
    /// that word (written by a Herald before it was kept) is refused.
    static func checkNewer(version: Int, compatibleFrom: Int?, known: Int) throws(StoreError) {
        guard let compatibleFrom, compatibleFrom <= known else {
            let allowed = compatibleFrom.map { "workers that know version \($0) or later" } ?? "no older worker"
            throw StoreError(
                code: .storeMigration,
                message:
                    "the database is at schema version \(version), written by a newer Herald that allows \(allowed); this one knows versions up to \(known): run a Herald at least as new as the one that migrated it"
            )
        }
    }

    /// The schema version the database is at (0 before ``migrate()``).
    public func schemaVersion() async throws(StoreError) -> Int {
        try await storeCall("schema version") { [self] in
            for try await (exists, ) in try await client.query(
                "SELECT to_regclass('herald_schema_version') IS NOT NULL",
                logger: logger
            ).decode((Bool,).self) where !exists {
                return 0
            }
            for try await (version, ) in try await client.query(
                "SELECT coalesce(max(version), 0) FROM herald_schema_version",
                logger: logger
            ).decode((Int,).self) {
                return version
            }
            return 0
        }
    }

    /// Runs `body`, turning PostgreSQL's errors into ``StoreError``s; retries the whole call when the
    /// server aborted it to break a deadlock or a serialization conflict (both leave no trace).
    ///
    /// - Parameter timeout: how long the call may take; by default the configured `callTimeout`.
    @discardableResult
    func storeCall<R: Sendable>(
        _ operation: String,
        retries: Int = 5,
        timeout: Duration? = nil,
        _ body: @escaping @Sendable () async throws -> R
    ) async throws(StoreError) -> R {
        let limit = timeout ?? callTimeout
        var attempt = 0
        while true {
            do {
                return try await CallDeadline.run(limit, body)
            } catch is CallDeadline.TimedOut {
                throw StoreError(
                    code: .storeOpen,
                    message: "\(operation): PostgreSQL at \(endpoint) did not answer within \(limit)"
                )
            } catch {
                // A transaction wraps the server's error; the server's error is what to report.
                var underlying: any Error = error
                if let transaction = error as? PostgresTransactionError {
                    underlying =
                        transaction.closureError ?? transaction.commitError ?? transaction.beginError ?? error
                }
                if let stored = underlying as? StoreError { throw stored }
                guard let failure = underlying as? PSQLError else {
                    // The pool's errors (it gave up connecting, it was shut down) name a case and
                    // carry no query or credentials.
                    throw StoreError(
                        code: .storeOpen,
                        message: "\(operation): PostgreSQL at \(endpoint) is unavailable (\(underlying))"
                    )
                }
                if failure.code == .connectionError || failure.code == .serverClosedConnection {
                    throw StoreError(
                        code: .storeOpen,
                        message: "\(operation): cannot reach PostgreSQL at \(endpoint) (\(failure.code))"
                    )
                }
                let state = failure.serverInfo?[.sqlState]
                if (state == "40P01" || state == "40001") && attempt < retries {
                    attempt += 1
                    continue
                }
                // The server's message names tables and constraints, not values: `detail` (which can
                // quote a row) is left out.
                let message = failure.serverInfo?[.message] ?? "\(failure.code)"
                // Data exceptions, integrity violations and program limits (an index entry too
                // large) come from what the call holds: trying it again would fail again.
                let rejected = state.map { ["22", "23", "54"].contains($0.prefix(2)) } ?? false
                throw StoreError(
                    code: rejected ? .storeRejected : .storeQuery,
                    message: "\(operation): \(state ?? "-") \(message)"
                )
            }
        }
    }
}

extension PostgresStore {
    /// Usually called right after the service group starts `run()`: give it a moment rather than
    /// lease a connection from a pool that is not running yet (postgres-nio warns, then waits). Not
    /// forever: a store that is never run fails in the call that follows with the pool's error.
    func waitForPool() async {
        for _ in 0..<1000 where !running.load(ordering: .acquiring) {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Creates an empty database named `name` on this store's server: a fresh ledger for a load test
    /// or a benchmark run, beside the one this store uses.
    ///
    /// - Parameter name: lower-case letters, digits and underscores (it cannot be bound as a
    ///   parameter, so nothing else is accepted).
    public func createDatabase(named name: String) async throws(StoreError) {
        guard !name.isEmpty, name.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 })
        else {
            throw StoreError(code: .storeOpen, message: "a database name is lower-case letters, digits and '_'")
        }
        await waitForPool()
        try await storeCall("create database") { [self] in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
    }
}
