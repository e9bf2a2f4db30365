import HeraldEvents
import HeraldKafka

/// The records a build produces, in order, with the values it writes (outbound messages, decision
/// records) written one after another into one buffer and handed out as parts of shared arrays of
/// about ``arenaSize`` bytes. An array per record cost an allocation, a copy out of the writer and
/// a free for each of them; this way several records share each.
struct RecordWriter: ~Copyable {
    private var records: [KafkaProducerRecord] = []
    private var writer = JSONStreamWriter(capacity: arenaSize + 4096)
    /// The records whose values are still in `writer`: each one's index in `records`, and where
    /// its value starts. A value ends where the next begins (a discarded one leaves no gap).
    private var pending: [(record: Int, start: Int)] = []

    /// How many bytes of values are written before they move into an array of their own: about
    /// eight outbound messages: most of the saving of larger arrays, with less memory in each
    /// (with 32 KiB arrays `bench pipeline` peaked at 301–303 MB, with these at 299 MB).
    static let arenaSize = 8 * 1024

    init() {}

    /// Appends a record made elsewhere (a dead letter).
    mutating func append(_ record: KafkaProducerRecord) {
        records.append(record)
    }

    /// Appends a record, without headers, whose value `write` writes, unless it returns `nil` or
    /// throws: then what it wrote is dropped and no record is added. (Outbound and decision records
    /// have none; a record with headers is made elsewhere and appended whole.)
    ///
    /// - Returns: what `write` returned.
    mutating func append<Result, Failure: Error>(
        topic: String,
        key: KafkaBytes?,
        value write: (inout JSONStreamWriter) throws(Failure) -> Result?
    ) throws(Failure) -> Result? {
        let start = writer.count
        let result: Result?
        do {
            result = try write(&writer)
        } catch {
            writer.discardDocument(from: start)
            throw error
        }
        guard let result else {
            writer.discardDocument(from: start)
            return nil
        }
        pending.append((records.count, start))
        records.append(KafkaProducerRecord(topic: topic, key: key, value: nil))
        if writer.count >= Self.arenaSize { moveValues() }
        return result
    }

    /// Moves the pending values into an array of their own and gives each record its part.
    private mutating func moveValues() {
        guard !pending.isEmpty else { return }
        let arena = writer.bytes
        for index in pending.indices {
            let end = index + 1 < pending.count ? pending[index + 1].start : arena.count
            records[pending[index].record].value = KafkaBytes(arena, pending[index].start..<end)
        }
        pending.removeAll(keepingCapacity: true)
        writer.truncate(to: 0)
    }

    /// The records, in the order they were appended.
    consuming func finish() -> [KafkaProducerRecord] {
        moveValues()
        return records
    }
}
