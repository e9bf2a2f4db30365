import HeraldStore

/// The store implementations every store-backed test runs against.
public enum StoreKind: String, CaseIterable, Sendable {
    case sqlite, postgres, memory
}

/// Runs `body` with a fresh, empty store of `kind`: an in-memory SQLite database, a database of its
/// own in the test process's PostgreSQL cluster, or a ``MemoryStore``; each keeps at most
/// `maximumDevicesPerUser` devices for one user.
public func withStore<R: Sendable>(
    _ kind: StoreKind,
    maximumDevicesPerUser: Int = DirectoryLimits.maximumDevicesPerUser,
    _ body: (any StateStore) async throws -> R
) async throws -> R {
    switch kind {
    case .sqlite: try await body(try SQLiteStore(path: ":memory:", maximumDevicesPerUser: maximumDevicesPerUser))
    case .postgres:
        try await withPostgresStore(maximumDevicesPerUser: maximumDevicesPerUser) { store in try await body(store) }
    case .memory: try await body(MemoryStore(maximumDevicesPerUser: maximumDevicesPerUser))
    }
}
