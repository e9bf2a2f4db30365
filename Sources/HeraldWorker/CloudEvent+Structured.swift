import HeraldEvents

extension CloudEvent {
    /// The event in CloudEvents' structured JSON form, whichever mode it arrived in: what the store
    /// keeps with a deferred or digested notification, to render it when it comes due.
    public func structuredJSON() -> String {
        var writer = JSONStreamWriter(capacity: 512)
        writer.beginObject()
        writer.member("specversion", specVersion)
        writer.member("id", id)
        writer.member("source", source)
        writer.member("type", type)
        if let time { writer.member("time", timestamp: time) }
        if let subject { writer.member("subject", subject) }
        if let dataContentType { writer.member("datacontenttype", dataContentType) }
        if let dataSchema { writer.member("dataschema", dataSchema) }
        for (name, value) in extensions.sorted(by: { $0.key < $1.key }) { writer.member(name, value) }
        if let data {
            writer.key("data")
            writer.value(data)
        }
        writer.endObject()
        return writer.withBytes { String(decoding: $0, as: UTF8.self) }
    }
}
