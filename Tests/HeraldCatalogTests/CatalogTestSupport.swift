import Foundation
import HeraldEvents

@testable import HeraldCatalog

/// The example catalog in the repository.
let exampleCatalog = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("catalog").path

/// The sample event for `kind` in the example catalog.
func sampleEvent(_ kind: String) throws -> CloudEvent {
    let data = try Data(contentsOf: URL(fileURLWithPath: "\(exampleCatalog)/events/\(kind).json"))
    return try EventDecoder().decode(value: Array(data))
}

/// A copy of the example catalog in a temporary directory, changed by `edit` (file → new text).
func brokenCatalog(_ edits: [String: (String) -> String?]) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-catalog-\(UUID().uuidString)")
    try FileManager.default.copyItem(atPath: exampleCatalog, toPath: directory.path)
    for (file, edit) in edits {
        let url = directory.appendingPathComponent(file)
        let original = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        if let changed = edit(original) {
            try changed.write(to: url, atomically: true, encoding: .utf8)
        } else {
            try FileManager.default.removeItem(at: url)
        }
    }
    return directory.path
}
