/// The compiled messages of one locale.
public struct MessageBundle: Sendable {
    public var locale: String
    /// The file it was loaded from, relative to the catalog.
    public var file: String
    var messages: [String: ICUMessage]
    /// The source patterns, by key.
    public var patterns: [String: String]
}
