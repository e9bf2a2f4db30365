import HeraldEvents
import HeraldKafka
import HeraldPolicy

/// One recorded record as the worker would have consumed it, with its event decoded when it could
/// be (replay needs event times before it decides), and its place in the log for reports.
public struct ReplayRecord: Sendable {
    public var message: KafkaMessage
    /// `nil` for a poison record: the worker's own decoding then dead-letters it with its reason.
    public var event: CloudEvent?
    /// Event time: the CloudEvent's `time`, else the record's Kafka timestamp. `nil` for a poison
    /// record: when it was produced says nothing about the event time of the log around it (a log
    /// re-published today would otherwise move the clock to today).
    public var time: Timestamp?

    public init(message: KafkaMessage, event: CloudEvent?, time: Timestamp?) {
        self.message = message
        self.event = event
        self.time = time
    }

    /// The key a producer gives an event's record: the user it is about (`data.userId`, else the
    /// first of `data.recipientIds` or `data.userIds`), so one user's events stay in order.
    public static func key(ofData data: JSONValue?) -> String? {
        guard case .object(let data)? = data else { return nil }
        if let user = data["userId"]?.stringValue { return user }
        for name in ["recipientIds", "userIds"] {
            if case .array(let users)? = data[name], let first = users.first?.stringValue { return first }
        }
        return nil
    }
}

/// Turns the lines of a recorded log into records. A line is one of:
/// - a structured-mode CloudEvent (JSON Lines, as producers write them or `herald dev` samples);
/// - a `kcat -J` envelope: `{"topic", "partition", "offset", "ts", "headers": [name, value, ...],
///   "key", "payload"}`, whose payload may be a structured or binary-mode (`ce_*` headers) event;
/// - anything else, which is kept as a poison record so that replay reports it as the worker would
///   dead-letter it.
///
/// A CloudEvent line has no Kafka coordinates: its topic is `herald.directory` for directory event
/// types and the log's domain topic otherwise, its partition 0 and its offset the line number, so a
/// dead letter names the line to look at.
///
/// A log is usually one format throughout, so the format of the last line is tried first: a kcat
/// dump is not parsed as a CloudEvent (and fails) before each line is read as an envelope.
struct LineDecoder {
    var directoryTopic: String
    var domainTopic: String
    let decoder = EventDecoder()
    /// The log's lines share most of their member names and many values.
    private let strings = JSONStringTable()
    private var lastWasKcat = false

    init(directoryTopic: String, domainTopic: String) {
        self.directoryTopic = directoryTopic
        self.domainTopic = domainTopic
    }

    mutating func record(_ line: UnsafeRawBufferPointer, lineNumber: Int) -> ReplayRecord? {
        var bytes = line
        while let first = bytes.first, first == 0x20 || first == 0x09 {
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        }
        while let last = bytes.last, last == 0x20 || last == 0x09 {
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast())
        }
        guard !bytes.isEmpty else { return nil }
        if lastWasKcat, let record = kcatRecord(bytes) { return record }
        if let event = try? decoder.decode(value: bytes, headers: [], strings: strings) {
            lastWasKcat = false
            let topic = DirectoryEvent.isEventType(event.type) ? directoryTopic : domainTopic
            let message = KafkaMessage(
                topic: topic,
                partition: 0,
                offset: Int64(lineNumber),
                timestampMilliseconds: event.time?.epochMilliseconds,
                key: ReplayRecord.key(ofData: event.data).map { KafkaBytes($0) },
                value: KafkaBytes(Array(bytes))
            )
            return ReplayRecord(message: message, event: event, time: event.time)
        }
        if !lastWasKcat, let record = kcatRecord(bytes) {
            lastWasKcat = true
            return record
        }
        let message = KafkaMessage(
            topic: domainTopic,
            partition: 0,
            offset: Int64(lineNumber),
            key: nil,
            value: KafkaBytes(Array(bytes))
        )
        return ReplayRecord(message: message, event: nil, time: nil)
    }

    /// A `kcat -C -J` line; `nil` if the line is not one.
    private func kcatRecord(_ bytes: UnsafeRawBufferPointer) -> ReplayRecord? {
        guard case .object(let envelope)? = try? JSONParser().parse(bytes),
            let topic = envelope["topic"]?.stringValue, envelope["payload"] != nil || envelope["offset"] != nil
        else { return nil }
        func integer(_ name: String) -> Int64? {
            if case .number(let text)? = envelope[name] { return Int64(text) }
            return nil
        }
        var headers: [KafkaHeader] = []
        if case .array(let flat)? = envelope["headers"] {
            // kcat writes headers as one flat array: name, value, name, value, ...
            var index = 0
            while index + 1 < flat.count {
                if let name = flat[index].stringValue {
                    headers.append(KafkaHeader(name, flat[index + 1].stringValue.map { KafkaBytes($0) }))
                }
                index += 2
            }
        }
        let value = envelope["payload"]?.stringValue.map { Array($0.utf8) }
        let timestamp = integer("ts")
        let message = KafkaMessage(
            topic: topic,
            partition: Int32(clamping: integer("partition") ?? 0),
            offset: integer("offset") ?? -1,
            timestampMilliseconds: timestamp,
            key: envelope["key"]?.stringValue.map { KafkaBytes($0) },
            value: value.map { KafkaBytes($0) },
            headers: headers
        )
        let event = try? decoder.decode(
            value: value,
            headers: headers.map { EventDecoder.Header(name: $0.name, value: $0.value.map(Array.init)) }
        )
        return ReplayRecord(
            message: message,
            event: event,
            time: event.flatMap { $0.time ?? timestamp.map { Timestamp(epochMilliseconds: $0) } }
        )
    }
}
