#if canImport(Glibc)
import Glibc
#endif

/// Decodes CloudEvents 1.0 from Kafka records, in structured mode (the value is the JSON event) or
/// binary mode (attributes in `ce_*` headers, the value is the data).
///
/// Binary mode is recognised by a `ce_specversion` header, as the Kafka protocol binding says.
public struct EventDecoder: Sendable {
    /// The largest record (value plus headers) accepted, in bytes. Default 256 KiB.
    public var maxSize: Int = 256 * 1024

    public init() {}

    /// One record header.
    public struct Header: Sendable {
        public var name: String
        public var value: [UInt8]?

        public init(name: String, value: [UInt8]?) {
            self.name = name
            self.value = value
        }
    }

    /// Decodes one record.
    ///
    /// - Parameter strings: short strings of the events decoded before, for the JSON parser to take
    ///   instead of making them again (``JSONStringTable``).
    /// - Throws: ``EventError`` with a stable code.
    public func decode(
        value: UnsafeRawBufferPointer?,
        headers: [Header],
        strings: JSONStringTable? = nil
    ) throws(EventError) -> CloudEvent {
        let size = (value?.count ?? 0) + headers.reduce(0) { $0 + $1.name.utf8.count + ($1.value?.count ?? 0) }
        guard size <= maxSize else {
            throw EventError(code: .oversize, message: "event of \(size) bytes is larger than the limit of \(maxSize)")
        }
        if headers.contains(where: { $0.name == "ce_specversion" }) {
            return try decodeBinary(value: value, headers: headers, strings: strings)
        }
        return try decodeStructured(value: value, strings: strings)
    }

    /// Decodes a record whose value is given as bytes.
    public func decode(value: [UInt8]?, headers: [Header] = []) throws(EventError) -> CloudEvent {
        guard let value else { return try decode(value: Optional<UnsafeRawBufferPointer>.none, headers: headers) }
        let result = value.withUnsafeBytes { bytes in
            Result { () throws(EventError) in try decode(value: bytes, headers: headers) }
        }
        return try result.get()
    }

    /// A structured event's member name, told from the bytes it is written with: the known ones
    /// without making a string of them.
    private enum Name {
        case specVersion, id, source, type, time, subject, dataContentType, dataSchema, data, dataBase64
        /// An extension attribute's name.
        case other(String)

        init(_ utf8: UnsafeRawBufferPointer) {
            // By length first, then byte for byte: a name is compared with the one attribute of its
            // length, instead of with each in turn.
            func matches(_ name: StaticString) -> Bool {
                memcmp(utf8.baseAddress!, name.utf8Start, name.utf8CodeUnitCount) == 0
            }
            switch utf8.count {
            case 2 where matches("id"): self = .id
            case 4 where matches("type"): self = .type
            case 4 where matches("time"): self = .time
            case 4 where matches("data"): self = .data
            case 6 where matches("source"): self = .source
            case 7 where matches("subject"): self = .subject
            case 10 where matches("dataschema"): self = .dataSchema
            case 11 where matches("specversion"): self = .specVersion
            case 11 where matches("data_base64"): self = .dataBase64
            case 15 where matches("datacontenttype"): self = .dataContentType
            default: self = .other(String(decoding: utf8, as: UTF8.self))
            }
        }

        init(_ name: String) {
            var name = name
            self = name.withUTF8 { Name(UnsafeRawBufferPointer($0)) }
        }

        /// The name as written, for messages.
        var text: String {
            switch self {
            case .specVersion: "specversion"
            case .id: "id"
            case .source: "source"
            case .type: "type"
            case .time: "time"
            case .subject: "subject"
            case .dataContentType: "datacontenttype"
            case .dataSchema: "dataschema"
            case .data: "data"
            case .dataBase64: "data_base64"
            case .other(let name): name
            }
        }
    }

    /// The attributes of one event as they are read, without a dictionary for the known ones.
    private struct Attributes {
        var specVersion: String?
        var id: String?
        var source: String?
        var type: String?
        /// `time`, parsed as it is read (its text is not kept: the event carries the moment).
        var time: Timestamp?
        /// `time`'s text when it is not an RFC 3339 date-time (then `time` is nil), for the error.
        var invalidTime: String?
        var subject: String?
        var dataContentType: String?
        var dataSchema: String?
        var extensions: [String: String] = [:]

        /// Sets attribute `name` (not `data` nor `data_base64`) to `value`; a later one of a name
        /// replaces an earlier.
        mutating func set(_ name: Name, _ value: String) {
            switch name {
            case .id: id = value
            case .type: type = value
            case .time:
                var text = value
                setTime(text.withUTF8 { Self.time(UnsafeRawBufferPointer($0)) })
            case .source: source = value
            case .subject: subject = value
            case .dataSchema: dataSchema = value
            case .specVersion: specVersion = value
            case .dataContentType: dataContentType = value
            case .data, .dataBase64: preconditionFailure("'\(name.text)' is not an attribute")
            case .other(let name): extensions[name] = value
            }
        }

        /// A `time` as read: the moment, or the text when it is not one.
        enum Time {
            case moment(Timestamp)
            case invalid(String)
        }

        /// `time` read from its UTF-8.
        static func time(_ utf8: UnsafeRawBufferPointer) -> Time {
            if let moment = Timestamp(rfc3339: utf8) { return .moment(moment) }
            return .invalid(String(decoding: utf8, as: UTF8.self))
        }

        mutating func setTime(_ parsed: Time) {
            switch parsed {
            case .moment(let moment): (time, invalidTime) = (moment, nil)
            case .invalid(let text): (time, invalidTime) = (nil, text)
            }
        }
    }

    /// Reads a structured event member by member: the attributes straight into ``Attributes``, and
    /// only `data` built as a tree. Building the whole event as a tree first (the outer object's
    /// members made and destroyed, each attribute copied out) cost about 600 instructions of the
    /// 14,000 or so decoding an event takes (callgrind, `scripts/instructions-per-event replay`).
    ///
    /// A value that is not JSON is `not_json` wherever the fault is, also after a bad attribute:
    /// the first bad attribute is kept until the whole value has been read.
    private func decodeStructured(
        value: UnsafeRawBufferPointer?,
        strings: JSONStringTable?
    ) throws(EventError) -> CloudEvent {
        guard let value, !value.isEmpty else {
            throw EventError(code: .notJSON, message: "the record has no value")
        }
        var attributes = Attributes()
        var data: JSONValue?
        var invalid: EventError?
        do throws(JSONParser.Failure) {
            var reader = JSONReader(value, strings: strings)
            let kind = reader.peek()
            if try reader.beginObject() {
                try readMembers(&reader, into: &attributes, data: &data, invalid: &invalid)
            } else {
                // JSON (`beginObject` checked and skipped it), but not an object.
                invalid = EventError(
                    code: .badAttribute,
                    message: "a structured event must be a JSON object, not \(kind?.typeName ?? "a value")"
                )
            }
            try reader.end()
        } catch {
            throw EventError(code: .notJSON, message: "the value is not JSON: \(error)")
        }
        if let invalid { throw invalid }
        return try makeEvent(attributes: attributes, data: data)
    }

    /// The members of a structured event's object, up to its end: the attributes, `data`, and the
    /// first bad attribute, if any (in `invalid`; reading goes on, as a fault of JSON later in the
    /// value is `not_json` instead).
    private func readMembers(
        _ reader: inout JSONReader,
        into attributes: inout Attributes,
        data: inout JSONValue?,
        invalid: inout EventError?
    ) throws(JSONParser.Failure) {
        while let name = try reader.nextMember({ Name($0) }) {
            let member = reader.peek()
            switch (name, member) {
            case (.data, _):
                // The first member of a name is the one a look-up finds.
                if data == nil { data = try reader.value() } else { try reader.skipValue() }
            // Null, as any attribute's, is the attribute left out.
            case (_, .null?): try reader.skipValue()
            case (.dataBase64, _):
                try reader.skipValue()
                invalid =
                    invalid
                    ?? EventError(code: .badAttribute, message: "data_base64 is not supported: Herald reads JSON data")
            // Read in place: most events have a time, and its text is not kept.
            // `string(_:)` gives nil only for a value that is not a string, which `peek` ruled out.
            case (.time, .string?): attributes.setTime(try reader.string(Attributes.time)!)
            case (_, .string?): attributes.set(name, try reader.string() ?? "")
            case (.other, .number?): attributes.set(name, try reader.number() ?? "")
            case (.other, .bool?): attributes.set(name, try reader.value() == .bool(true) ? "true" : "false")
            default:
                try reader.skipValue()
                invalid =
                    invalid
                    ?? EventError(
                        code: .badAttribute,
                        message: "attribute '\(name.text)' must be a string, not \(member?.typeName ?? "a value")"
                    )
            }
        }
    }

    private func decodeBinary(
        value: UnsafeRawBufferPointer?,
        headers: [Header],
        strings: JSONStringTable?
    ) throws(EventError) -> CloudEvent {
        var attributes = Attributes()
        var contentType: String?
        for header in headers {
            guard let bytes = header.value else { continue }
            if header.name.hasPrefix("ce_") {
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw EventError(code: .badAttribute, message: "header '\(header.name)' is not UTF-8")
                }
                let name = Name(String(header.name.dropFirst(3)))
                // Not attributes: the data is the record's value. As an extension, `data` would be
                // written beside the data when the event is kept, and read back in its place.
                if case .data = name { throw Self.dataHeader(header.name) }
                if case .dataBase64 = name { throw Self.dataHeader(header.name) }
                attributes.set(name, text)
            } else if header.name.lowercased() == "content-type" {
                contentType = String(decoding: bytes, as: UTF8.self)
            }
        }
        if let contentType { attributes.dataContentType = contentType }
        var data: JSONValue?
        if let value, !value.isEmpty {
            do {
                data = try JSONParser().parse(value, strings: strings)
            } catch {
                throw EventError(code: .notJSON, message: "the data is not JSON: \(error)")
            }
        }
        return try makeEvent(attributes: attributes, data: data)
    }

    /// The longest event id accepted, in bytes of UTF-8: far more than a UUID (36), a ULID (26) or
    /// a composite key needs.
    public static let maximumIDBytes = 512

    private func makeEvent(attributes: Attributes, data: JSONValue?) throws(EventError) -> CloudEvent {
        func required(_ value: String?, _ name: String) throws(EventError) -> String {
            guard let value, !value.isEmpty else {
                throw EventError(code: .missingAttribute, message: "required attribute '\(name)' is missing")
            }
            return value
        }
        let specVersion = try required(attributes.specVersion, "specversion")
        guard specVersion == "1.0" else {
            throw EventError(
                code: .unsupportedSpecVersion,
                message: "specversion '\(specVersion.prefix(16))' is not supported (only 1.0)"
            )
        }
        let id = try required(attributes.id, "id")
        // The id is part of the decision ledger's key: PostgreSQL refuses an index entry over 2,704
        // bytes, and text holding U+0000, and a batch it refuses is retried, holding the partition,
        // for ever.
        guard id.utf8.count <= Self.maximumIDBytes else {
            throw EventError(
                code: .badAttribute,
                message: "attribute 'id' is \(id.utf8.count) bytes long; at most \(Self.maximumIDBytes) are accepted"
            )
        }
        guard !id.utf8Contains(0) else {
            throw EventError(code: .badAttribute, message: "attribute 'id' contains U+0000")
        }
        let source = try required(attributes.source, "source")
        let type = try required(attributes.type, "type")
        if let text = attributes.invalidTime {
            throw EventError(
                code: .badTime,
                message: "time '\(text.prefix(40))' is not an RFC 3339 date-time from year 0000 to 9999"
            )
        }
        if let contentType = attributes.dataContentType, data != nil, !Self.isJSON(contentType) {
            throw EventError(
                code: .badAttribute,
                message: "datacontenttype '\(contentType.prefix(60))' is not JSON; Herald reads JSON data"
            )
        }
        var event = CloudEvent(
            id: id,
            source: source,
            type: type,
            time: attributes.time,
            subject: attributes.subject,
            dataContentType: attributes.dataContentType,
            dataSchema: attributes.dataSchema,
            data: data,
            extensions: attributes.extensions
        )
        event.specVersion = specVersion
        return event
    }

    private static func dataHeader(_ header: String) -> EventError {
        EventError(
            code: .badAttribute,
            message: "header '\(header)' names no attribute: in binary mode the data is the record's value"
        )
    }

    private static func isJSON(_ contentType: String) -> Bool {
        if contentType.hasUTF8("application/json") { return true }
        let mediaType =
            contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: " ").lowercased() } ?? ""
        return mediaType == "application/json" || mediaType.hasSuffix("+json") || mediaType == "text/json"
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: Character) -> Substring {
        var result = self
        while result.first == characters { result = result.dropFirst() }
        while result.last == characters { result = result.dropLast() }
        return result
    }
}
