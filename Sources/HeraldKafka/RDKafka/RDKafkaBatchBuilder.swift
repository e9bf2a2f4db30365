import CRdKafka

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Copies a run of consumed librdkafka messages into one Swift buffer and ``KafkaMessage`` views.
///
/// One batch costs one buffer allocation and one array of messages, whatever its size. The builder is
/// owned by the consumer's poll thread and caches topic names, so a topic's `String` is made once.
struct RDKafkaBatchBuilder {
    private var topicNames: [OpaquePointer: String] = [:]
    private var lastTopic: (handle: OpaquePointer, name: String)?

    /// Builds messages from `count` C messages. Messages carrying an error are skipped and returned
    /// separately. Does not destroy the C messages.
    mutating func build(
        _ messages: UnsafeMutablePointer<UnsafeMutablePointer<rd_kafka_message_t>?>,
        count: Int
    ) -> (messages: [KafkaMessage], errors: [KafkaError]) {
        var size = 0
        var errors: [KafkaError] = []
        // Each message's header list, asked for once: for a message without headers librdkafka
        // parses the record's header bytes again at every call (a buffer made and freed, about
        // 600 instructions), as it keeps a list only when there is one.
        var headerLists = [OpaquePointer?](repeating: nil, count: count)
        for index in 0..<count {
            let message = messages[index]!
            if message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR { continue }
            size += message.pointee.key_len + message.pointee.len
            var headers: OpaquePointer?
            if rd_kafka_message_headers(message, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR, let headers {
                headerLists[index] = headers
                var headerIndex = 0
                var name: UnsafePointer<CChar>?
                var value: UnsafeRawPointer?
                var valueSize = 0
                while rd_kafka_header_get_all(headers, headerIndex, &name, &value, &valueSize)
                    == RD_KAFKA_RESP_ERR_NO_ERROR
                {
                    size += HeaderEncoding.encodedSize(nameLength: strlen(name!), valueLength: valueSize)
                    headerIndex += 1
                }
            }
        }

        var built: [KafkaMessage] = []
        built.reserveCapacity(count)
        // Every message's bytes land in `arena`; the views are created after it is filled, because
        // a view holds the array and a later write would copy it.
        var layout: [(key: Int, value: Int, headers: Int, headersEnd: Int, headerCount: Int)] = []
        layout.reserveCapacity(count)
        let arena = [UInt8](unsafeUninitializedCapacity: max(size, 1)) { buffer, initialized in
            var cursor = 0
            func copy(_ source: UnsafeRawPointer?, _ length: Int) {
                if length > 0, let source {
                    UnsafeMutableRawPointer(buffer.baseAddress! + cursor).copyMemory(from: source, byteCount: length)
                }
                cursor += length
            }
            func copyLength(_ value: UInt32) {
                withUnsafeBytes(of: value.littleEndian) { copy($0.baseAddress, 4) }
            }
            for index in 0..<count {
                let message = messages[index]!
                if message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR { continue }
                let keyStart = cursor
                copy(message.pointee.key, message.pointee.key_len)
                let valueStart = cursor
                copy(message.pointee.payload, message.pointee.len)
                let headersStart = cursor
                var headerCount = 0
                if let headers = headerLists[index] {
                    var name: UnsafePointer<CChar>?
                    var value: UnsafeRawPointer?
                    var valueSize = 0
                    while rd_kafka_header_get_all(headers, headerCount, &name, &value, &valueSize)
                        == RD_KAFKA_RESP_ERR_NO_ERROR
                    {
                        let nameLength = strlen(name!)
                        copyLength(UInt32(nameLength))
                        copyLength(value == nil ? UInt32(bitPattern: -1) : UInt32(valueSize))
                        copy(name, nameLength)
                        if value != nil { copy(value, valueSize) }
                        headerCount += 1
                    }
                }
                layout.append((keyStart, valueStart, headersStart, cursor, headerCount))
            }
            initialized = max(size, 1)
        }

        var layoutIndex = 0
        for index in 0..<count {
            let message = messages[index]!
            if message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                errors.append(Self.error(of: message))
                continue
            }
            let place = layout[layoutIndex]
            layoutIndex += 1
            var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
            let timestamp = rd_kafka_message_timestamp(message, &timestampType)
            built.append(
                KafkaMessage(
                    topic: topicName(message.pointee.rkt),
                    partition: message.pointee.partition,
                    offset: message.pointee.offset,
                    timestampMilliseconds: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp,
                    key: message.pointee.key == nil
                        ? nil : KafkaBytes(base: arena, start: place.key, count: message.pointee.key_len),
                    value: message.pointee.payload == nil
                        ? nil : KafkaBytes(base: arena, start: place.value, count: message.pointee.len),
                    headers: place.headerCount == 0
                        ? nil : KafkaBytes(base: arena, start: place.headers, count: place.headersEnd - place.headers),
                    headersCount: Int32(place.headerCount)
                )
            )
        }
        return (built, errors)
    }

    private mutating func topicName(_ topic: OpaquePointer?) -> String {
        guard let topic else { return "" }
        // Batches come in runs of one partition, so the last topic is nearly always the one.
        if let lastTopic, lastTopic.handle == topic { return lastTopic.name }
        if let name = topicNames[topic] {
            lastTopic = (topic, name)
            return name
        }
        let name = String(cString: rd_kafka_topic_name(topic))
        topicNames[topic] = name
        lastTopic = (topic, name)
        return name
    }

    private static func error(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaError {
        var context = "consume"
        if let topic = message.pointee.rkt {
            context = "consume \(String(cString: rd_kafka_topic_name(topic)))[\(message.pointee.partition)]"
        }
        var error = KafkaError(rdkafka: message.pointee.err, context: context)
        if let payload = message.pointee.payload, message.pointee.len > 0 {
            let text = String(
                decoding: UnsafeRawBufferPointer(start: payload, count: message.pointee.len),
                as: UTF8.self
            )
            error.message = "\(context): \(text)"
        }
        return error
    }
}
