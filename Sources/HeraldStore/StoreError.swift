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
}
