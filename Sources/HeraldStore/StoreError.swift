/// A state-store failure: a stable code, and a message that names tables and operations but never
/// contains user ids or tokens.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The database could not be opened or created.
        public static let open = Code("store.open")
        /// A schema migration failed.
        public static let migration = Code("store.migration")
        /// A query failed.
        public static let query = Code("store.query")
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
