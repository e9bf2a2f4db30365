import HeraldEvents
import HeraldKafka

/// The records a build produces, in order, with the values it writes (outbound messages, decision
/// records) written one after another into one buffer, which is handed over whole, as the shared
/// storage of the records written into it, every ``arenaSize`` bytes or so. An array per record
/// cost an allocation, a copy out of the writer and a free for each of them; an array per arena
/// still cost the copy (about 3% of the pipeline's instructions); this way the bytes stay where
/// they were written.
struct RecordWriter: ~Copyable {
    private var records: [KafkaProducerRecord] = []
    private var writer = JSONStreamWriter(capacity: arenaSize + 4096)
    /// The records whose values are still in `writer`: each one's index in `records`, and where
    /// its value starts. A value ends where the next begins (a discarded one leaves no gap).
    private var pending: [(record: Int, start: Int)] = []

    /// How many bytes of values are written before the buffer is handed over: about eight outbound
    /// messages: most of the saving of larger arenas, with less memory in each (with 32 KiB arenas
    /// `bench pipeline` peaked at 301–303 MB, with these at 299 MB). Each buffer has room for a few
    /// KB past it, so that the value that crosses it rarely makes the writer grow.
    static let arenaSize = 8 * 1024

    /// The buffers handed over, given back when their last record is acknowledged (see
    /// ``KafkaBufferPool``). Up to 512 wait (6 MB): a batch of 3,000 events fills about 750 (7 or 8
    /// outbound messages each), freed as its records are acknowledged and taken again by the
    /// batches after it.
    static let arenas = KafkaBufferPool(bufferSize: arenaSize + 4096, limit: 512)

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

    /// Gives each pending record its part of the values written so far, handing the writer's buffer
    /// over to them (no copy) and going on in another: one of ``arenas`` (``arenaSize`` and some
    /// room), or a token one when nothing more is written.
    private mutating func moveValues(last: Bool = false) {
        guard !pending.isEmpty else { return }
        // When nothing more is written, a token buffer to end with rather than one of the pool's.
        let next =
            last
            ? (buffer: UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 1), capacity: 16)
            : (buffer: Self.arenas.take(), capacity: Self.arenas.bufferSize)
        let written = writer.handOver(startingOverIn: next.buffer, capacity: next.capacity)
        // A buffer that grew past the pool's size is freed when done with, not given back.
        let arena = KafkaByteBuffer(
            adopting: written.base,
            count: written.count,
            capacity: written.capacity,
            returningTo: Self.arenas
        )
        for index in pending.indices {
            let end = index + 1 < pending.count ? pending[index + 1].start : written.count
            records[pending[index].record].value = KafkaBytes(arena, pending[index].start..<end)
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// The records, in the order they were appended.
    consuming func finish() -> [KafkaProducerRecord] {
        moveValues(last: true)
        return records
    }
}
