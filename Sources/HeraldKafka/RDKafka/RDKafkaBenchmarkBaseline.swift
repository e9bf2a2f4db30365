import CRdKafka

/// The physical-limit baseline for `herald bench kafka`: a feeder and a consume→produce passthrough
/// written directly against librdkafka's C API, with no Swift concurrency, no buffering and no offset
/// tracking beyond the highest delivered offset per partition.
package enum RDKafkaBenchmarkBaseline {
    /// Produces `count` copies of `payload` (the first 12 bytes after `idOffset` replaced by a
    /// zero-padded message number) round-robin over `partitions`, never more than `window` ahead of
    /// `consumed()`. Blocks the calling thread; run it on a thread of its own.
    package static func feed(
        bootstrapServers: String,
        topic: String,
        partitions: Int32,
        count: Int,
        payload: [UInt8],
        idOffset: Int,
        window: Int,
        consumed: @Sendable () -> Int
    ) throws(KafkaError) {
        try feed(bootstrapServers: bootstrapServers, topic: topic, count: count, window: window, consumed: consumed) {
            number,
            key,
            value in
            if value.isEmpty { value = payload }
            writeID(number, into: &value, at: idOffset)
            return Int32(number) % partitions
        }
    }

    /// Produces `count` messages to `topic`, never more than `window` ahead of `consumed()`: the
    /// embedded cluster keeps only about 5 MiB per partition, so the feed must stream rather than
    /// preload. `message(number, &key, &value)` writes message `number`'s key (empty: none) and value
    /// into buffers reused from the previous message, and returns its partition. Blocks the calling
    /// thread; run it on a thread of its own.
    package static func feed(
        bootstrapServers: String,
        topic: String,
        count: Int,
        window: Int,
        consumed: @Sendable () -> Int,
        message: (Int, inout [UInt8], inout [UInt8]) -> Int32
    ) throws(KafkaError) {
        let conf = try RDKafkaConfig.make(
            [
                ("bootstrap.servers", bootstrapServers), ("client.id", "herald-bench-feeder"), ("linger.ms", "5"),
                ("queue.buffering.max.messages", "100000"), ("enable.idempotence", "true"),
            ],
            role: "bench feeder"
        )
        let producer = try RDKafkaConfig.makeHandle(type: RD_KAFKA_PRODUCER, conf: conf, role: "bench feeder")
        let topicHandle = rd_kafka_topic_new(producer, topic, nil)
        defer {
            rd_kafka_topic_destroy(topicHandle)
            rd_kafka_destroy(producer)
        }
        var key: [UInt8] = []
        var value: [UInt8] = []
        var produced = 0
        var written = -1
        var partition: Int32 = 0
        while produced < count {
            if produced - consumed() >= window {
                rd_kafka_poll(producer, 1)
                continue
            }
            if written != produced {
                partition = message(produced, &key, &value)
                written = produced
            }
            let error = key.withUnsafeBytes { keyBytes in
                value.withUnsafeBytes { bytes in
                    herald_produce_topic(
                        producer,
                        topicHandle,
                        partition,
                        RD_KAFKA_MSG_F_COPY,
                        keyBytes.isEmpty ? nil : keyBytes.baseAddress,
                        keyBytes.count,
                        bytes.baseAddress,
                        bytes.count,
                        nil,
                        0,
                        nil
                    )
                }
            }
            if error == RD_KAFKA_RESP_ERR__QUEUE_FULL {
                rd_kafka_poll(producer, 10)
                continue
            }
            if error != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(rdkafka: error, context: "bench feeder") }
            produced += 1
            if produced % 1024 == 0 { rd_kafka_poll(producer, 0) }
        }
        rd_kafka_flush(producer, 30_000)
    }

    /// Writes `value` as 12 zero-padded decimal digits.
    package static func writeID(_ value: Int, into bytes: inout [UInt8], at offset: Int) {
        var remaining = value
        for position in stride(from: offset + 11, through: offset, by: -1) {
            bytes[position] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
        }
    }

    /// What a passthrough writes for each message it reads, when not the message itself: the
    /// traffic of another workload (the worker's outbound records) written by librdkafka alone, so
    /// that a benchmark can tell the time Kafka takes for its traffic from the time it takes itself.
    package struct Shape: Sendable {
        /// Messages written per thousand read, spread evenly (1,840: 1.84 per message read).
        package var outputsPerThousand: Int
        /// Each written message's key (empty: the key of the message read).
        package var key: [UInt8]
        /// Each written message's value.
        package var value: [UInt8]
        /// Each written message's headers.
        package var headers: [(name: String, value: [UInt8])]

        package init(
            outputsPerThousand: Int,
            key: [UInt8] = [],
            value: [UInt8],
            headers: [(name: String, value: [UInt8])]
        ) {
            self.outputsPerThousand = outputsPerThousand
            self.key = key
            self.value = value
            self.headers = headers
        }

        /// The bytes of a message's key and headers (names and values).
        package var keyAndHeaderBytes: Int {
            headers.reduce(key.count) { $0 + $1.name.utf8.count + $1.value.count }
        }

        /// How many messages to write for the message read `number`th (from 0).
        func outputs(forInput number: Int) -> Int {
            (number + 1) * outputsPerThousand / 1000 - number * outputsPerThousand / 1000
        }
    }

    /// A delivery report's opaque for a message that is not the last written for its input: it
    /// does not complete the input.
    private static let notLast = UInt(1) << 62

    /// Consumes `count` messages of `input` in group `group`, produces each one's bytes (or, with a
    /// `shape`, the shape's messages) to the same partition of `output`, and stores an input offset
    /// only after the delivery report of the last message written for it. Returns the time from the
    /// first consumed message to the last delivery. Blocks the calling thread; run it on a thread of
    /// its own. `done` counts completed inputs.
    package static func passthrough(
        bootstrapServers: String,
        group: String,
        input: String,
        output: String,
        partitions: Int,
        count: Int,
        batchSize: Int,
        fetchMaxWait: Duration,
        shape: Shape? = nil,
        done: ProgressCounter
    ) throws(KafkaError) -> Duration {
        let consumerConf = try RDKafkaConfig.make(
            [
                ("bootstrap.servers", bootstrapServers), ("client.id", "herald-bench-raw"), ("group.id", group),
                ("enable.auto.offset.store", "false"), ("auto.offset.reset", "earliest"),
                ("auto.commit.interval.ms", "1000"), ("queued.max.messages.kbytes", "65536"),
                ("fetch.wait.max.ms", String(fetchMaxWait.milliseconds)), ("fetch.error.backoff.ms", "50"),
            ],
            role: "bench raw consumer"
        )
        let consumer = try RDKafkaConfig.makeHandle(
            type: RD_KAFKA_CONSUMER,
            conf: consumerConf,
            role: "bench raw consumer"
        )
        let producerConf = try RDKafkaConfig.make(
            [
                ("bootstrap.servers", bootstrapServers), ("client.id", "herald-bench-raw"), ("linger.ms", "5"),
                ("enable.idempotence", "true"), ("queue.buffering.max.messages", "100000"),
            ],
            role: "bench raw producer"
        )
        let state = PassthroughState(partitions: partitions)
        let statePointer = Unmanaged.passRetained(state).toOpaque()
        defer { Unmanaged<PassthroughState>.fromOpaque(statePointer).release() }
        rd_kafka_conf_set_opaque(producerConf, statePointer)
        rd_kafka_conf_set_dr_msg_cb(producerConf) { _, message, opaque in
            guard let message, let opaque else { return }
            let state = Unmanaged<PassthroughState>.fromOpaque(opaque).takeUnretainedValue()
            // The opaque carries the input message's partition and offset.
            let bits = UInt(bitPattern: message.pointee._private)
            guard message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                state.failed += 1
                return
            }
            guard bits & RDKafkaBenchmarkBaseline.notLast == 0 else { return }
            let partition = Int(bits >> 40)
            let offset = Int64(bits & ((1 << 40) - 1))
            state.highest[partition] = max(state.highest[partition], offset + 1)
            state.delivered += 1
        }
        let producer = try RDKafkaConfig.makeHandle(
            type: RD_KAFKA_PRODUCER,
            conf: producerConf,
            role: "bench raw producer"
        )
        let outputHandle = rd_kafka_topic_new(producer, output, nil)
        defer {
            rd_kafka_consumer_close(consumer)
            rd_kafka_destroy(consumer)
            rd_kafka_topic_destroy(outputHandle)
            rd_kafka_destroy(producer)
        }
        // Warm up: the idempotent producer's first delivery waits for its producer id, which is
        // start-up cost, not passthrough throughput (the wrapper variant warms up the same way).
        let warmUp = Array("warm-up".utf8)
        warmUp.withUnsafeBytes { bytes in
            _ = herald_produce_topic(
                producer,
                outputHandle,
                0,
                RD_KAFKA_MSG_F_COPY,
                nil,
                0,
                bytes.baseAddress,
                bytes.count,
                nil,
                0,
                nil
            )
        }
        rd_kafka_flush(producer, 30_000)
        state.delivered = 0
        state.highest = Array(repeating: 0, count: partitions)

        rd_kafka_poll_set_consumer(consumer)
        let subscription = rd_kafka_topic_partition_list_new(1)!
        rd_kafka_topic_partition_list_add(subscription, input, herald_partition_unassigned())
        rd_kafka_subscribe(consumer, subscription)
        rd_kafka_topic_partition_list_destroy(subscription)
        let queue = rd_kafka_queue_get_consumer(consumer)!
        defer { rd_kafka_queue_destroy(queue) }

        let messages = UnsafeMutablePointer<UnsafeMutablePointer<rd_kafka_message_t>?>.allocate(capacity: batchSize)
        defer { messages.deallocate() }
        var stored = [Int64](repeating: -1, count: partitions)
        var started: ContinuousClock.Instant?
        var read = 0
        // Inputs for which the shape writes nothing: complete as soon as they are read.
        var skipped = 0
        while state.delivered + skipped < count {
            let received = RDKafkaConsumerClient.consumeReady(
                queue,
                into: messages,
                capacity: batchSize,
                timeout: .milliseconds(100)
            )
            if received > 0 && started == nil { started = .now }
            for index in 0..<max(received, 0) {
                let message = messages[index]!
                if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                    let opaque = UInt(message.pointee.partition) << 40 | UInt(message.pointee.offset)
                    if let shape {
                        let outputs = shape.outputs(forInput: read)
                        if outputs == 0 { skipped += 1 }
                        for output in 0..<outputs {
                            let mark = output == outputs - 1 ? opaque : opaque | notLast
                            let enqueued = shape.key.withUnsafeBytes { key in
                                shape.value.withUnsafeBytes { value in
                                    produce(
                                        producer,
                                        outputHandle,
                                        message,
                                        key: key.isEmpty ? nil : key,
                                        value,
                                        shape.headers,
                                        opaque: mark
                                    )
                                }
                            }
                            if !enqueued { state.failed += 1 }
                        }
                    } else {
                        let enqueued = produce(
                            producer,
                            outputHandle,
                            message,
                            key: nil,
                            UnsafeRawBufferPointer(start: message.pointee.payload, count: message.pointee.len),
                            [],
                            opaque: opaque
                        )
                        if !enqueued { state.failed += 1 }
                    }
                    read += 1
                }
                rd_kafka_message_destroy(message)
            }
            rd_kafka_poll(producer, 0)
            done.store(state.delivered + skipped)
            // Store the highest delivered offsets, once per round.
            var changed: [(Int32, Int64)] = []
            for partition in 0..<partitions where state.highest[partition] > stored[partition] {
                stored[partition] = state.highest[partition]
                changed.append((Int32(partition), stored[partition]))
            }
            if !changed.isEmpty {
                let list = rd_kafka_topic_partition_list_new(Int32(changed.count))!
                for (partition, offset) in changed {
                    rd_kafka_topic_partition_list_add(list, input, partition).pointee.offset = offset
                }
                rd_kafka_offsets_store(consumer, list)
                rd_kafka_topic_partition_list_destroy(list)
            }
            if state.failed > 0 {
                throw KafkaError(
                    code: .broker,
                    message: "bench raw passthrough: \(state.failed) messages not delivered"
                )
            }
        }
        let elapsed = (started ?? .now).duration(to: .now)
        done.store(state.delivered + skipped)
        return elapsed
    }

    /// Produces one message to `input`'s partition, with `key` (nil: `input`'s key), waiting while
    /// the queue is full. Returns false if librdkafka refused it.
    private static func produce(
        _ producer: OpaquePointer?,
        _ topic: OpaquePointer?,
        _ input: UnsafeMutablePointer<rd_kafka_message_t>,
        key: UnsafeRawBufferPointer?,
        _ value: UnsafeRawBufferPointer,
        _ headers: [(name: String, value: [UInt8])],
        opaque: UInt
    ) -> Bool {
        while true {
            // As the worker's producer does: a header list per message, owned by librdkafka once
            // the message is enqueued.
            var list: OpaquePointer?
            if !headers.isEmpty {
                list = rd_kafka_headers_new(headers.count)
                for header in headers {
                    // The name by pointer and length, as the worker's producer passes it: as a C
                    // string it would be copied into an allocation of its own for its terminator.
                    var name = header.name
                    name.withUTF8 { name in
                        header.value.withUnsafeBytes { bytes in
                            _ = rd_kafka_header_add(list, name.baseAddress, name.count, bytes.baseAddress, bytes.count)
                        }
                    }
                }
            }
            let error = herald_produce_topic(
                producer,
                topic,
                input.pointee.partition,
                RD_KAFKA_MSG_F_COPY,
                key.map { UnsafeMutableRawPointer(mutating: $0.baseAddress) } ?? input.pointee.key,
                key?.count ?? input.pointee.key_len,
                value.baseAddress,
                value.count,
                list,
                0,
                UnsafeMutableRawPointer(bitPattern: opaque)
            )
            if error == RD_KAFKA_RESP_ERR_NO_ERROR { return true }
            if let list { rd_kafka_headers_destroy(list) }
            guard error == RD_KAFKA_RESP_ERR__QUEUE_FULL else { return false }
            rd_kafka_poll(producer, 10)
        }
    }

    /// Delivery bookkeeping, touched only by the thread that polls the producer.
    private final class PassthroughState: @unchecked Sendable {
        // @unchecked: the delivery callback runs inside rd_kafka_poll on the passthrough's own thread,
        // the only thread that reads these fields.
        var highest: [Int64]
        var delivered = 0
        var failed = 0

        init(partitions: Int) { highest = Array(repeating: 0, count: partitions) }
    }
}
