import HeraldEvents
import HeraldKafka
import HeraldWorker

#if canImport(Glibc)
import Glibc
#endif

/// The files a replay writes, one JSON document per line, in log order:
/// - outbound: each `herald.outbound` record's value (schema `herald.outbound.v1`);
/// - decisions (optional): each decision record's value, as on `herald.decisions`;
/// - dead letters (optional): `{code, message, topic, partition, offset, key, value}` per event the
///   worker would have dead-lettered.
///
/// Used by one task at a time (the replayer's), hence `@unchecked Sendable`.
public final class ReplayOutput: @unchecked Sendable {
    private let outbound: LineFile
    private let decisions: LineFile?
    private let deadLetters: LineFile?

    /// - Throws: ``ReplayError`` `.cannotWrite` naming the file.
    /// Whether there is a decisions file to fill.
    public var writesDecisions: Bool { decisions != nil }

    public init(outbound: String, decisions: String? = nil, deadLetters: String? = nil) throws(ReplayError) {
        self.outbound = try LineFile(path: outbound)
        self.decisions = try decisions.map { path throws(ReplayError) in try LineFile(path: path) }
        self.deadLetters = try deadLetters.map { path throws(ReplayError) in try LineFile(path: path) }
    }

    func write(_ records: [KafkaProducerRecord], topics: WorkerTopics) throws(ReplayError) {
        for record in records {
            guard let value = record.value else { continue }
            if record.topic == topics.outbound {
                try outbound.write(value)
            } else if record.topic == topics.decisions {
                try decisions?.write(value)
            } else if record.topic == topics.eventsDeadLetter, let deadLetters {
                try deadLetters.write(KafkaBytes(Self.deadLetterLine(record)))
            }
        }
    }

    func finish() throws(ReplayError) {
        try outbound.close()
        try decisions?.close()
        try deadLetters?.close()
    }

    static func deadLetterLine(_ record: KafkaProducerRecord) -> [UInt8] {
        func header(_ name: String) -> String { record.headers.first(named: name)?.string ?? "" }
        var writer = JSONStreamWriter(capacity: 256 + (record.value?.count ?? 0))
        writer.beginObject()
        writer.member("code", header(HeraldHeader.errorCode))
        writer.member("message", header(HeraldHeader.errorMessage))
        writer.member("topic", header(HeraldHeader.originalTopic))
        writer.member("partition", integer: Int64(header(HeraldHeader.originalPartition)) ?? -1)
        writer.member("offset", integer: Int64(header(HeraldHeader.originalOffset)) ?? -1)
        if let key = record.key { writer.member("key", key.string) }
        if let value = record.value { writer.member("value", value.string) }
        writer.endObject()
        return writer.bytes
    }
}

/// A buffered output file written a line at a time.
final class LineFile {
    let path: String
    private var file: UnsafeMutablePointer<FILE>?

    init(path: String) throws(ReplayError) {
        guard let file = fopen(path, "wb") else {
            throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
        setvbuf(file, nil, _IOFBF, 1 << 20)
        self.path = path
        self.file = file
    }

    deinit {
        if let file { fclose(file) }
    }

    func write(_ line: KafkaBytes) throws(ReplayError) {
        guard let file else { return }
        let written = line.withUnsafeBytes { bytes in
            bytes.isEmpty ? 0 : fwrite(bytes.baseAddress!, 1, bytes.count, file)
        }
        guard written == line.count, fputc(0x0A, file) != EOF else {
            throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
    }

    func close() throws(ReplayError) {
        guard let file else { return }
        self.file = nil
        guard fclose(file) == 0 else {
            throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
    }
}
