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

    /// The attributes of one event as they are read, without a dictionary for the known ones.
    private struct Attributes {
        var specVersion: String?
        var id: String?
        var source: String?
        var type: String?
        var time: String?
        var subject: String?
        var dataContentType: String?
        var dataSchema: String?
        var extensions: [String: String] = [:]

        static func isKnown(_ name: String) -> Bool {
            switch name {
            case "specversion", "id", "source", "type", "time", "subject", "datacontenttype", "dataschema", "data",
                "data_base64":
                true
            default: false
            }
        }

        mutating func set(_ name: String, _ value: String) {
            // By length first, then byte for byte: a name is compared with the one attribute of its
            // length, instead of with each in turn (about twenty calls per event).
            switch name.utf8.count {
            case 2 where name.hasUTF8("id"): id = value
            case 4 where name.hasUTF8("type"): type = value
            case 4 where name.hasUTF8("time"): time = value
            case 6 where name.hasUTF8("source"): source = value
            case 7 where name.hasUTF8("subject"): subject = value
            case 10 where name.hasUTF8("dataschema"): dataSchema = value
            case 11 where name.hasUTF8("specversion"): specVersion = value
            case 15 where name.hasUTF8("datacontenttype"): dataContentType = value
            default: extensions[name] = value
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
        while let name = try reader.nextMember() {
            if name.hasUTF8("data") {
                // The first member of a name is the one a look-up finds.
                if data == nil { data = try reader.value() } else { try reader.skipValue() }
                continue
            }
            if name.hasUTF8("data_base64") {
                // Null, as any attribute's, is the attribute left out.
                let isNull = reader.peek() == .null
                try reader.skipValue()
                if isNull { continue }
                invalid =
                    invalid
                    ?? EventError(code: .badAttribute, message: "data_base64 is not supported: Herald reads JSON data")
                continue
            }
            let member = reader.peek()
            switch member {
            case .string?: attributes.set(name, try reader.string() ?? "")
            case .null?: try reader.skipValue()
            case .number? where !Attributes.isKnown(name): attributes.set(name, try reader.number() ?? "")
            case .bool? where !Attributes.isKnown(name):
                attributes.set(name, try reader.value() == .bool(true) ? "true" : "false")
            default:
                try reader.skipValue()
                invalid =
                    invalid
                    ?? EventError(
                        code: .badAttribute,
                        message: "attribute '\(name)' must be a string, not \(member?.typeName ?? "a value")"
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
                let name = String(header.name.dropFirst(3))
                // Not attributes: the data is the record's value. As an extension, `data` would be
                // written beside the data when the event is kept, and read back in its place.
                if name.hasUTF8("data") || name.hasUTF8("data_base64") {
                    throw EventError(
                        code: .badAttribute,
                        message:
                            "header '\(header.name)' names no attribute: in binary mode the data is the record's value"
                    )
                }
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
        var time: Timestamp?
        if let text = attributes.time {
            guard let parsed = Timestamp(rfc3339: text) else {
                throw EventError(
                    code: .badTime,
                    message: "time '\(text.prefix(40))' is not an RFC 3339 date-time from year 0000 to 9999"
                )
            }
            time = parsed
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
            time: time,
            subject: attributes.subject,
            dataContentType: attributes.dataContentType,
            dataSchema: attributes.dataSchema,
            data: data,
            extensions: attributes.extensions
        )
        event.specVersion = specVersion
        return event
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
