import HeraldEvents

/// A state-store failure. `message` names tables and operations but never contains user ids or
/// tokens.
public struct StoreError: CodedError {
    public typealias Code = ErrorCode
    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode {
    /// The database could not be opened or created.
    public static let storeOpen = ErrorCode("store.open")
    /// A schema migration failed.
    public static let storeMigration = ErrorCode("store.migration")
    /// A query failed.
    public static let storeQuery = ErrorCode("store.query")
    /// The store refused what a call holds — a value it cannot keep, a constraint it breaks — so
    /// the same call would be refused again however often it is made (PostgreSQL's SQLSTATE
    /// classes 22, 23 and 54; SQLite's constraint, too-big and mismatch errors). A caller can
    /// find what it was by trying the parts of the call apart.
    public static let storeRejected = ErrorCode("store.rejected")
}
