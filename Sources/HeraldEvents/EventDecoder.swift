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
    /// - Throws: ``EventError`` with a stable code.
    public func decode(value: UnsafeRawBufferPointer?, headers: [Header]) throws(EventError) -> CloudEvent {
        let size = (value?.count ?? 0) + headers.reduce(0) { $0 + $1.name.utf8.count + ($1.value?.count ?? 0) }
        guard size <= maxSize else {
            throw EventError(code: .oversize, message: "event of \(size) bytes is larger than the limit of \(maxSize)")
        }
        if headers.contains(where: { $0.name == "ce_specversion" }) {
            return try decodeBinary(value: value, headers: headers)
        }
        return try decodeStructured(value: value)
    }

    /// Decodes a record whose value is given as bytes.
    public func decode(value: [UInt8]?, headers: [Header] = []) throws(EventError) -> CloudEvent {
        guard let value else { return try decode(value: Optional<UnsafeRawBufferPointer>.none, headers: headers) }
        let result = value.withUnsafeBytes { bytes in
            Result { () throws(EventError) in try decode(value: bytes, headers: headers) }
        }
        return try result.get()
    }

    private static let knownAttributes: Set<String> = [
        "specversion", "id", "source", "type", "time", "subject", "datacontenttype", "dataschema", "data",
        "data_base64",
    ]

    private func decodeStructured(value: UnsafeRawBufferPointer?) throws(EventError) -> CloudEvent {
        guard let value, !value.isEmpty else {
            throw EventError(code: .notJSON, message: "the record has no value")
        }
        let json: JSONValue
        do {
            json = try JSONParser().parse(value)
        } catch {
            throw EventError(code: .notJSON, message: "the value is not JSON: \(error)")
        }
        guard case .object(let object) = json else {
            throw EventError(
                code: .badAttribute,
                message: "a structured event must be a JSON object, not \(json.typeName)"
            )
        }
        var attributes: [String: String] = [:]
        for (key, member) in object where key != "data" && key != "data_base64" {
            switch member {
            case .string(let text): attributes[key] = text
            case .number(let text) where !Self.knownAttributes.contains(key): attributes[key] = text
            case .bool(let flag) where !Self.knownAttributes.contains(key): attributes[key] = flag ? "true" : "false"
            case .null: continue
            default:
                throw EventError(
                    code: .badAttribute,
                    message: "attribute '\(key)' must be a string, not \(member.typeName)"
                )
            }
        }
        if object["data_base64"] != nil {
            throw EventError(code: .badAttribute, message: "data_base64 is not supported: Herald reads JSON data")
        }
        return try makeEvent(attributes: attributes, data: object["data"])
    }

    private func decodeBinary(value: UnsafeRawBufferPointer?, headers: [Header]) throws(EventError) -> CloudEvent {
        var attributes: [String: String] = [:]
        var contentType: String?
        for header in headers {
            guard let bytes = header.value else { continue }
            if header.name.hasPrefix("ce_") {
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw EventError(code: .badAttribute, message: "header '\(header.name)' is not UTF-8")
                }
                attributes[String(header.name.dropFirst(3))] = text
            } else if header.name.lowercased() == "content-type" {
                contentType = String(decoding: bytes, as: UTF8.self)
            }
        }
        if let contentType { attributes["datacontenttype"] = contentType }
        var data: JSONValue?
        if let value, !value.isEmpty {
            do {
                data = try JSONParser().parse(value)
            } catch {
                throw EventError(code: .notJSON, message: "the data is not JSON: \(error)")
            }
        }
        return try makeEvent(attributes: attributes, data: data)
    }

    private func makeEvent(attributes: [String: String], data: JSONValue?) throws(EventError) -> CloudEvent {
        func required(_ name: String) throws(EventError) -> String {
            guard let value = attributes[name], !value.isEmpty else {
                throw EventError(code: .missingAttribute, message: "required attribute '\(name)' is missing")
            }
            return value
        }
        let specVersion = try required("specversion")
        guard specVersion == "1.0" else {
            throw EventError(
                code: .unsupportedSpecVersion,
                message: "specversion '\(specVersion.prefix(16))' is not supported (only 1.0)"
            )
        }
        let id = try required("id")
        let source = try required("source")
        let type = try required("type")
        var time: Timestamp?
        if let text = attributes["time"] {
            guard let parsed = Timestamp(rfc3339: text) else {
                throw EventError(code: .badTime, message: "time '\(text.prefix(40))' is not an RFC 3339 date-time")
            }
            time = parsed
        }
        if let contentType = attributes["datacontenttype"], data != nil, !Self.isJSON(contentType) {
            throw EventError(
                code: .badAttribute,
                message: "datacontenttype '\(contentType.prefix(60))' is not JSON; Herald reads JSON data"
            )
        }
        var extensions: [String: String] = [:]
        for (key, value) in attributes where !Self.knownAttributes.contains(key) { extensions[key] = value }
        var event = CloudEvent(
            id: id,
            source: source,
            type: type,
            time: time,
            subject: attributes["subject"],
            dataContentType: attributes["datacontenttype"],
            dataSchema: attributes["dataschema"],
            data: data,
            extensions: extensions
        )
        event.specVersion = specVersion
        return event
    }

    private static func isJSON(_ contentType: String) -> Bool {
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
