import HeraldEvents
import HeraldKafka
import Logging

/// Where recorded records come from. A source hands them out in order, a chunk at a time, and
/// waits while the consumer works; the replayer reads a few chunks ahead of the batch it decides
/// (``Replayer/chunksAhead``), so memory stays bounded whatever the log's length.
public protocol RecordSource: Sendable {
    /// A name for reports (a file path, `topic T`).
    var name: String { get }

    /// Calls `body` with consecutive chunks of records until the source is exhausted.
    ///
    /// - Throws: ``ReplayError`` when the source cannot be read, or what `body` throws.
    func read(_ body: ([ReplayRecord]) async throws -> Void) async throws
}

/// A recorded log file: JSON Lines of CloudEvents or `kcat -J` envelopes, in any mix, optionally
/// gzip-compressed.
public struct RecordedLogFile: RecordSource {
    public var path: String
    public var directoryTopic: String
    /// The topic CloudEvent lines are attributed to; the worker treats every domain topic alike.
    public var domainTopic: String
    public var chunkSize = 256

    /// - Parameter domainTopic: default: the file's name, so that a dead letter's original place,
    ///   `events.jsonl[0]@1234`, names the file and line.
    public init(path: String, directoryTopic: String = "herald.directory", domainTopic: String? = nil) {
        self.path = path
        self.directoryTopic = directoryTopic
        self.domainTopic = domainTopic ?? String(path.split(separator: "/").last ?? "replay")
    }

    public var name: String { path }

    public func read(_ body: ([ReplayRecord]) async throws -> Void) async throws {
        let reader = try LineReader(path: path)
        var decoder = LineDecoder(directoryTopic: directoryTopic, domainTopic: domainTopic)
        var chunk: [ReplayRecord] = []
        chunk.reserveCapacity(chunkSize)
        while true {
            let line = try reader.nextLine { bytes in decoder.record(bytes, lineNumber: reader.lineNumber) }
            guard let line else { break }
            guard let record = line else { continue }
            chunk.append(record)
            if chunk.count == chunkSize {
                try await body(chunk)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if !chunk.isEmpty { try await body(chunk) }
    }
}

/// A time range of a Kafka topic, read with a throwaway consumer group from the topic's start until
/// every partition is read to its end: records stamped in `[since, until)` are replayed. The whole
/// topic is read (and the rest skipped); partitions interleave as the consumer fetches them.
public struct TopicRange: RecordSource {
    public var bootstrapServers: [String]
    public var topic: String
    public var since: Timestamp?
    public var until: Timestamp?
    public var directoryTopic: String
    public var logger: Logger

    public init(
        bootstrapServers: [String],
        topic: String,
        since: Timestamp?,
        until: Timestamp?,
        directoryTopic: String = "herald.directory",
        logger: Logger
    ) {
        self.bootstrapServers = bootstrapServers
        self.topic = topic
        self.since = since
        self.until = until
        self.directoryTopic = directoryTopic
        self.logger = logger
    }

    public var name: String { "topic \(topic)" }

    public func read(_ body: ([ReplayRecord]) async throws -> Void) async throws {
        let decoder = EventDecoder()
        try await TopicReader(bootstrapServers: bootstrapServers, topic: topic, clientID: "herald-replay")
            .read(logger: logger) { messages in
                var chunk: [ReplayRecord] = []
                chunk.reserveCapacity(messages.count)
                for message in messages {
                    let stamp = message.timestampMilliseconds.map { Timestamp(epochMilliseconds: $0) }
                    if let since, let stamp, stamp < since { continue }
                    if let until, let stamp, stamp >= until { continue }
                    let headers = message.headers.map {
                        EventDecoder.Header(name: $0.name, value: $0.value.map(Array.init))
                    }
                    let event = try? decoder.decode(value: message.value.map(Array.init), headers: headers)
                    chunk.append(ReplayRecord(message: message, event: event, time: event.flatMap { $0.time ?? stamp }))
                }
                if !chunk.isEmpty { try await body(chunk) }
            }
    }
}

public enum ReplayError: Error, Sendable, CustomStringConvertible {
    case cannotRead(path: String, reason: String)
    case cannotWrite(path: String, reason: String)
    /// The output has a decisions file, but the replayer makes no decision records
    /// (`Replayer.Configuration.topics.decisions` is nil): the file would stay empty.
    case decisionsNotRecorded

    public var description: String {
        switch self {
        case .cannotRead(let path, let reason): "cannot read \(path): \(reason)"
        case .cannotWrite(let path, let reason): "cannot write \(path): \(reason)"
        case .decisionsNotRecorded:
            "a decisions file needs decision records: set the replayer's topics.decisions (herald.decisions)"
        }
    }
}
