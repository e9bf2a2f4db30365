import HeraldStore
import Logging
import ServiceLifecycle

/// Where Herald keeps its state: `sqlite:PATH` (or a plain path; `:memory:` for nothing on disk) or
/// a `postgres://` URL.
public enum StoreLocation: Sendable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresStore.Configuration)

    /// - Throws: ``StoreError`` naming what is wrong, without repeating a URL (it may hold a
    ///   password).
    public init(_ text: String) throws(StoreError) {
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(try PostgresStore.Configuration(url: text))
        } else if text.hasPrefix("sqlite:") {
            self = .sqlite(path: String(text.dropFirst("sqlite:".count)))
        } else if text.isEmpty {
            throw StoreError(code: .storeOpen, message: "the store location is empty")
        } else {
            self = .sqlite(path: text)
        }
    }

    /// The location with PostgreSQL calls limited to `limit` each (SQLite is local: no limit).
    public func withCallTimeout(_ limit: Duration) -> StoreLocation {
        guard case .postgres(var configuration) = self else { return self }
        configuration.callTimeout = limit
        return .postgres(configuration)
    }

    /// Names the store without its password.
    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let configuration):
            "postgres://\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)"
        }
    }

    /// Opens the store, migrates it, runs `body` with it, and closes it.
    ///
    /// - Parameter directoryCache: users whose recipient record SQLite keeps in memory (PostgreSQL
    ///   is shared by workers that each see only part of `herald.directory`, so it is always read).
    /// - Parameter sqliteMemoryMapMegabytes: how much of a SQLite file is read through a memory map.
    /// - Parameter sqlitePageCacheMegabytes: the most memory SQLite's page cache holds.
    /// - Parameter sqliteSynchronous: when a SQLite commit reaches the disk.
    /// - Parameter maximumDevicesPerUser: the most devices the directory keeps for one user.
    /// - Parameter waitNotice: how often a warning says that the schema migration has not finished:
    ///   it waits up to 5 minutes for a PostgreSQL that does not answer (its client retries a
    ///   refused connection with no word of its own above `info`) or for another process's
    ///   migration.
    public func withStore<R: Sendable>(
        logger: Logger,
        directoryCache: Int = SQLiteStore.defaultDirectoryCacheCapacity,
        sqliteMemoryMapMegabytes: Int = SQLiteStore.defaultMemoryMapMegabytes,
        sqlitePageCacheMegabytes: Int = SQLiteStore.defaultPageCacheMegabytes,
        sqliteSynchronous: SQLiteStore.Synchronous = .full,
        maximumDevicesPerUser: Int = DirectoryLimits.maximumDevicesPerUser,
        waitNotice: Duration = .seconds(10),
        _ body: (any StateStore) async throws -> R
    ) async throws -> R {
        switch self {
        case .sqlite(let path):
            let store = try SQLiteStore(
                path: path,
                directoryCache: directoryCache,
                memoryMapMegabytes: sqliteMemoryMapMegabytes,
                pageCacheMegabytes: sqlitePageCacheMegabytes,
                synchronous: sqliteSynchronous,
                maximumDevicesPerUser: maximumDevicesPerUser
            )
            return try await body(store)
        case .postgres(var configuration):
            configuration.maximumDevicesPerUser = maximumDevicesPerUser
            let store = PostgresStore(configuration: configuration, logger: logger)
            let name = description
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.run() }
                defer { group.cancelAll() }
                let waiting = Task {
                    var waited = Duration.zero
                    while true {
                        try await Task.sleep(for: waitNotice)
                        waited += waitNotice
                        logger.warning(
                            "waiting for the store: its schema migration has not finished (PostgreSQL not answering, or another process migrating)",
                            metadata: ["store": "\(name)", "waited_s": "\(Int(waited.inSeconds))"]
                        )
                    }
                }
                do {
                    try await store.migrate()
                } catch {
                    waiting.cancel()
                    throw error
                }
                waiting.cancel()
                return try await body(store)
            }
        }
    }
}
