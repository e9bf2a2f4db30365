import Foundation
import HeraldEvents
import Logging
import Synchronization

/// One JSON object per line on standard error: `ts`, `level`, `logger`, `msg` and the metadata.
/// Whatever logs through it is responsible for what it puts in metadata: Herald logs user ids only
/// hashed (``HeraldWorker/Redact``) and never tokens or secrets.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private static let output = Mutex<Void>(())

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var writer = JSONStreamWriter(capacity: 256)
        writer.beginObject()
        let now = Timestamp(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        writer.member("ts", now.description)
        writer.member("level", event.level.rawValue)
        writer.member("logger", label)
        writer.member("msg", "\(event.message)")
        let merged = event.metadata.map { metadata.merging($0) { _, new in new } } ?? metadata
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) { writer.member(key, "\(value)") }
        writer.endObject()
        var line = writer.bytes
        line.append(UInt8(ascii: "\n"))
        Self.output.withLock { _ in
            line.withUnsafeBytes { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
        }
    }
}
