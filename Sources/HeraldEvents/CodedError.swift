/// A stable, bounded error code: a metric label and a dead-letter header value. Each module adds
/// its codes as static members (`ErrorCode.notJSON`, `ErrorCode.payloadTooLarge`, ...).
public struct ErrorCode: Sendable, Hashable, CustomStringConvertible {
    /// The code's name, e.g. `event.not_json`.
    public let name: String

    public init(_ name: String) { self.name = name }

    public var description: String { name }
}

/// An error with a stable ``ErrorCode`` and a message for people (which never contains personal
/// data such as tokens or user ids).
public protocol CodedError: Error, Sendable, Hashable, CustomStringConvertible {
    var code: ErrorCode { get }
    var message: String { get }
}

extension CodedError {
    public var description: String { "\(code): \(message)" }
}
