import HeraldStore

/// The store implementations every store-backed test runs against.
public enum StoreKind: String, CaseIterable, Sendable {
    case sqlite, postgres
}

/// Runs `body` with a fresh, empty store of `kind`: an in-memory SQLite database, or a database of
/// its own in the test process's PostgreSQL cluster.
public func withStore<R: Sendable>(_ kind: StoreKind, _ body: (any StateStore) async throws -> R) async throws -> R {
    switch kind {
    case .sqlite: try await body(try SQLiteStore(path: ":memory:"))
    case .postgres: try await withPostgresStore { store in try await body(store) }
    }
}
