import Foundation

/// A directory of its own under the system's temporary directory, removed with everything in it when
/// the last reference goes: a suite that holds one as a property cleans up after every test, so
/// test configurations and keys do not pile up in /tmp.
public final class ScratchDirectory: Sendable {
    public let path: String

    public init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to `name` in the directory (readable by the owner only: it may be a key) and
    /// returns the file's path.
    public func file(_ name: String, _ text: String) throws -> String {
        let file = path + "/" + name
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        return file
    }
}
