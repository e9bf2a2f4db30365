/// One problem found in a catalog, naming the file and the key it is about.
public struct CatalogDiagnostic: Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable {
        case error
        case warning
    }

    public var severity: Severity
    /// The file, relative to the catalog directory (e.g. `kinds/order.confirmed.yaml`).
    public var file: String
    /// The key within the file (e.g. `fields.total.type`, or a message key).
    public var key: String
    public var message: String

    public init(_ severity: Severity, file: String, key: String, _ message: String) {
        self.severity = severity
        self.file = file
        self.key = key
        self.message = message
    }

    public var description: String {
        "\(severity): \(file): \(key.isEmpty ? "" : "\(key): ")\(message)"
    }
}

/// A catalog that has errors; `diagnostics` lists all of them (and the warnings).
public struct CatalogError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [CatalogDiagnostic]

    public var errors: [CatalogDiagnostic] { diagnostics.filter { $0.severity == .error } }

    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }
}
