import CRdKafka
import Logging

/// The object librdkafka's callbacks receive as their opaque pointer.
///
/// It exists before `rd_kafka_new` (librdkafka may log while creating the handle) and outlives the
/// handle; the client it reports to is attached once the handle exists.
final class RDKafkaCallbackContext: @unchecked Sendable {
    // @unchecked: `logger` is immutable; the client references are set once, before the owning
    // client's poll thread starts, and only read afterwards. They are unowned(unsafe) because a
    // delivery report arrives for every message and a weak load costs atomics each time; it is safe
    // because each client sets its reference to nil at the start of its deinit, and the handle is destroyed
    // (after which no callback runs) before the client's memory is freed.
    let logger: Logger
    /// A consumer's record of its offset resets, which librdkafka reports only in its log. Owned
    /// here rather than reached through ``consumer``: the log callback runs on librdkafka's own
    /// threads, which may log while the consumer is being torn down.
    let offsetResets: OffsetResetRecorder?
    unowned(unsafe) var consumer: RDKafkaConsumerClient?
    unowned(unsafe) var producer: RDKafkaProducerClient?

    init(logger: Logger, offsetResets: OffsetResetRecorder? = nil) {
        self.logger = logger
        self.offsetResets = offsetResets
    }

    /// Installs the context and the log callback on a configuration. Returns the retained pointer
    /// that ``release(_:)`` must balance after the handle is destroyed.
    func install(on conf: OpaquePointer) -> UnsafeMutableRawPointer {
        let pointer = Unmanaged.passRetained(self).toOpaque()
        rd_kafka_conf_set_opaque(conf, pointer)
        rd_kafka_conf_set_log_cb(conf, rdKafkaLogTrampoline)
        return pointer
    }

    static func release(_ pointer: UnsafeMutableRawPointer) {
        Unmanaged<RDKafkaCallbackContext>.fromOpaque(pointer).release()
    }

    static func from(_ opaque: UnsafeMutableRawPointer?) -> RDKafkaCallbackContext? {
        guard let opaque else { return nil }
        return Unmanaged<RDKafkaCallbackContext>.fromOpaque(opaque).takeUnretainedValue()
    }
}

/// Forwards librdkafka's log lines to swift-log. A library logs at info or below: librdkafka's
/// warnings and errors arrive at info with their syslog level in metadata.
private func rdKafkaLogTrampoline(
    _ handle: OpaquePointer?,
    _ level: Int32,
    _ facility: UnsafePointer<CChar>?,
    _ message: UnsafePointer<CChar>?
) {
    guard let handle, let context = RDKafkaCallbackContext.from(rd_kafka_opaque(handle)) else { return }
    // An offset reset is a warning (LOG_WARNING, 4) of facility OFFSET, whatever the logger's level.
    if level <= 4, let recorder = context.offsetResets, let facility, let message,
        String(cString: facility) == "OFFSET"
    {
        recorder.record(logLine: String(cString: message))
    }
    let swiftLevel: Logger.Level = level <= 4 ? .info : (level <= 6 ? .debug : .trace)
    guard context.logger.logLevel <= swiftLevel else { return }
    context.logger.log(
        level: swiftLevel,
        "librdkafka",
        metadata: [
            "kafka.log.level": "\(level)",
            "kafka.log.facility": "\(facility.map { String(cString: $0) } ?? "")",
            "kafka.log.message": "\(message.map { String(cString: $0) } ?? "")",
            "kafka.client": "\(String(cString: rd_kafka_name(handle)))",
        ]
    )
}
