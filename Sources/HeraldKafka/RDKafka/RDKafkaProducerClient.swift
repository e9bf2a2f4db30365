import CRdKafka
import Logging
import Synchronization

/// The librdkafka producer handle and every C call made on it.
final class RDKafkaProducerClient: @unchecked Sendable {
    // @unchecked: `handle` is a librdkafka handle, documented as thread-safe for produce, flush and
    // poll; `reports` is appended by the delivery callback, which runs only inside `poll` and `flush`,
    // and both are called by the producer's poll thread alone; `onError` is set once before polling.
    // Confined to that thread, `reports` and `failures` are not checked for exclusive access at
    // run time (a call into the runtime for every delivery report).
    private let handle: OpaquePointer
    private let contextPointer: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var reports: [RawDeliveryReport] = []
    @exclusivity(unchecked) private var failures: [KafkaError] = []
    var onError: (@Sendable (KafkaError) -> Void)?
    /// One librdkafka topic handle per topic name, so producing neither converts the name to a C
    /// string nor makes librdkafka look the topic up by name for every message.
    private let topics = Mutex<[String: Topic]>([:])
    /// The records whose keys and values librdkafka reads in place (see ``produce(_:to:opaque:)``),
    /// by ticket. Held beside the handle, whose `deinit` destroys it before they are released.
    private let lent = Mutex<LentRecords>(LentRecords())

    private struct LentRecords {
        var byTicket: [UInt: ArraySlice<KafkaProducerRecord>] = [:]
        /// Set by ``purge()``: a purged message is reported while a request holding it may still
        /// be on its way out, so from then on records are kept until the handle is destroyed.
        var keepUntilDestroyed = false
    }

    /// A librdkafka topic handle, valid until the producer is destroyed.
    struct Topic: @unchecked Sendable {
        // @unchecked: an `rd_kafka_topic_t` is thread-safe and lives as long as the producer.
        fileprivate let handle: OpaquePointer
    }

    /// One delivery report, before it is matched to its ticket. Kept small (one arrives per
    /// message); a failed report's error is in the batch's `failures`, in order.
    struct RawDeliveryReport {
        var opaque: UInt
        var offset: Int64
        var partition: Int32
        var failed: Bool
    }

    /// The reports of one poll, and the errors of the failed ones in report order.
    struct Reports {
        var reports: [RawDeliveryReport]
        var failures: [KafkaError]
        var isEmpty: Bool { reports.isEmpty }
    }

    /// The result of one produce call.
    enum ProduceResult {
        case enqueued
        case queueFull
        case failed(KafkaError)
    }

    init(properties: [(String, String)], logger: Logger) throws(KafkaError) {
        let conf = try RDKafkaConfig.make(properties, role: "producer")
        let context = RDKafkaCallbackContext(logger: logger)
        contextPointer = context.install(on: conf)
        rd_kafka_conf_set_dr_msg_cb(conf, rdKafkaDeliveryTrampoline)
        rd_kafka_conf_set_error_cb(conf, rdKafkaProducerErrorTrampoline)
        do {
            handle = try RDKafkaConfig.makeHandle(type: RD_KAFKA_PRODUCER, conf: conf, role: "producer")
        } catch {
            RDKafkaCallbackContext.release(contextPointer)
            throw error
        }
        context.producer = self
    }

    deinit {
        // No callback may reach this object while it is being torn down.
        RDKafkaCallbackContext.from(contextPointer)?.producer = nil
        topics.withLock { topics in
            for topic in topics.values { rd_kafka_topic_destroy(topic.handle) }
        }
        rd_kafka_destroy(handle)
        RDKafkaCallbackContext.release(contextPointer)
    }

    /// The handle of a topic, created on first use.
    func topic(named name: String) -> Topic {
        topics.withLock { topics in
            if let topic = topics[name] { return topic }
            let topic = Topic(handle: rd_kafka_topic_new(handle, name, nil))
            topics[name] = topic
            return topic
        }
    }

    /// Keeps `records` alive while librdkafka reads their keys and values in place: until
    /// ``giveBack(_:)`` is called with `ticket` (after every one of them is reported), or the handle
    /// is destroyed. Called before the first of them is produced.
    func lend(_ records: ArraySlice<KafkaProducerRecord>, ticket: UInt) {
        lent.withLock { $0.byTicket[ticket] = records }
    }

    /// Ends the loans of `tickets`, whose messages have all been reported.
    func giveBack(_ tickets: some Sequence<UInt>) {
        // Taken out under the lock and dropped when it returns: their buffers are freed outside it.
        _ = lent.withLock { lent -> [ArraySlice<KafkaProducerRecord>] in
            if lent.keepUntilDestroyed { return [] }
            return tickets.compactMap { lent.byTicket.removeValue(forKey: $0) }
        }
    }

    /// Enqueues one record to `topic` (the handle of `record.topic`) without blocking. `opaque` comes
    /// back in its delivery report.
    ///
    /// The key and value are not copied (no `RD_KAFKA_MSG_F_COPY`): librdkafka reads them in place
    /// when it writes a produce request, so the record must have been lent (``lend(_:ticket:)``).
    /// A copy per message cost an allocation of its size, a copy of its bytes, and a free on the
    /// delivery thread, for bytes librdkafka copies into the request anyway. The pointers are into
    /// the records' arrays or ``KafkaByteBuffer``s, which are never mutated or moved, so they stay
    /// valid while the records are lent.
    func produce(_ record: KafkaProducerRecord, to topic: Topic, opaque: UInt) -> ProduceResult {
        var headers: OpaquePointer?
        if !record.headers.isEmpty {
            headers = rd_kafka_headers_new(record.headers.count)
            for header in record.headers {
                // The name by pointer and length: passed as a C string, each name was copied into an
                // array of its own (an allocation per header per message) to add its terminator.
                var name = header.name
                _ = name.withUTF8 { name in
                    name.withMemoryRebound(to: CChar.self) { name in
                        if let value = header.value {
                            value.withUnsafeBytes { bytes in
                                rd_kafka_header_add(
                                    headers,
                                    name.baseAddress,
                                    name.count,
                                    bytes.baseAddress,
                                    bytes.count
                                )
                            }
                        } else {
                            rd_kafka_header_add(headers, name.baseAddress, name.count, nil, 0)
                        }
                    }
                }
            }
        }
        let error = withOptionalBytes(record.key) { key in
            withOptionalBytes(record.value) { value in
                herald_produce_topic(
                    handle,
                    topic.handle,
                    record.partition ?? herald_partition_unassigned(),
                    0,
                    key.baseAddress,
                    key.count,
                    value.baseAddress,
                    value.count,
                    headers,
                    record.timestampMilliseconds ?? 0,
                    UnsafeMutableRawPointer(bitPattern: opaque)
                )
            }
        }
        if error == RD_KAFKA_RESP_ERR_NO_ERROR { return .enqueued }
        if headers != nil { rd_kafka_headers_destroy(headers) }
        if error == RD_KAFKA_RESP_ERR__QUEUE_FULL { return .queueFull }
        return .failed(KafkaError(rdkafka: error, context: "produce to \(record.topic)"))
    }

    /// Serves delivery reports and errors for up to `timeout`; returns the reports collected.
    func poll(timeout: Duration) -> Reports {
        rd_kafka_poll(handle, Int32(timeout.milliseconds))
        return takeReports()
    }

    /// Waits up to `timeout` for every queued message to be delivered (or fail).
    func flush(timeout: Duration) -> Reports {
        _ = rd_kafka_flush(handle, Int32(timeout.milliseconds))
        return takeReports()
    }

    /// Fails every message still queued or in flight; their reports arrive with the next poll.
    func purge() {
        lent.withLock { $0.keepUntilDestroyed = true }
        _ = rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
    }

    /// How many messages wait in librdkafka's queues (including requests not yet answered).
    var queuedCount: Int { Int(rd_kafka_outq_len(handle)) }

    /// Interrupts a `poll` that is waiting.
    func wake() {
        rd_kafka_yield(handle)
    }

    private func takeReports() -> Reports {
        let taken = Reports(reports: reports, failures: failures)
        reports = []
        reports.reserveCapacity(taken.reports.count)
        if !failures.isEmpty { failures = [] }
        return taken
    }

    fileprivate func delivered(_ message: UnsafePointer<rd_kafka_message_t>) {
        let opaque = UInt(bitPattern: message.pointee._private)
        let failed = message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR
        if failed {
            let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? "?"
            failures.append(KafkaError(rdkafka: message.pointee.err, context: "deliver to \(topic)"))
        }
        reports.append(
            RawDeliveryReport(
                opaque: opaque,
                offset: message.pointee.offset,
                partition: message.pointee.partition,
                failed: failed
            )
        )
    }

    fileprivate func failed(_ code: rd_kafka_resp_err_t, reason: String) {
        var error = KafkaError(rdkafka: code, context: "producer")
        if code == RD_KAFKA_RESP_ERR__FATAL {
            var buffer = [CChar](repeating: 0, count: 512)
            error = KafkaError(
                rdkafka: rd_kafka_fatal_error(handle, &buffer, buffer.count),
                context: "producer fatal error"
            )
            error.isFatal = true
        }
        error.message += " (\(reason))"
        onError?(error)
    }
}

/// Where an empty key or value points: librdkafka keeps the pointer (it reads no byte of it), so it
/// must not be a stack address.
nonisolated(unsafe) private let emptyPayload = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

/// Calls `body` with the bytes of `value`: a null pointer for `nil`, and a non-null pointer with
/// length zero for an empty value, which Kafka keeps distinct from null.
private func withOptionalBytes<R>(_ value: KafkaBytes?, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    guard let value else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
    if value.isEmpty { return body(UnsafeRawBufferPointer(start: emptyPayload, count: 0)) }
    return value.withUnsafeBytes(body)
}

private func rdKafkaDeliveryTrampoline(
    _ handle: OpaquePointer?,
    _ message: UnsafePointer<rd_kafka_message_t>?,
    _ opaque: UnsafeMutableRawPointer?
) {
    guard let message else { return }
    RDKafkaCallbackContext.from(opaque)?.producer?.delivered(message)
}

private func rdKafkaProducerErrorTrampoline(
    _ handle: OpaquePointer?,
    _ error: Int32,
    _ reason: UnsafePointer<CChar>?,
    _ opaque: UnsafeMutableRawPointer?
) {
    let text = reason.map { String(cString: $0) } ?? ""
    RDKafkaCallbackContext.from(opaque)?.producer?.failed(rd_kafka_resp_err_t(error), reason: text)
}
