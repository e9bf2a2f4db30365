/// What is left of a message's optional parts after the size budget dropped the first `dropped`
/// of them, in the documented order: data entries (last first), the subtitle (where the provider
/// shows one), then the deep link.
struct OptionalParts {
    /// A slice of the message's own entries when none is filtered out: no copy per build.
    var data: ArraySlice<PushMessage.KeyValue>
    var subtitle: String?
    var deepLink: String?

    init(_ message: PushMessage, dropped: Int, subtitleIsDroppable: Bool, dataFilter: (String) -> Bool = { _ in true })
    {
        var remaining = dropped
        var keepsAll = true
        message.data.forEachEntry { key, _ in keepsAll = keepsAll && dataFilter(key) }
        let filtered = keepsAll ? message.data : message.data.filter { dataFilter($0.key) }
        let removedData = min(remaining, filtered.count)
        data = filtered.dropLast(removedData)
        remaining -= removedData
        subtitle = message.subtitle
        if subtitleIsDroppable, remaining > 0, subtitle != nil {
            subtitle = nil
            remaining -= 1
        }
        deepLink = remaining > 0 ? nil : message.deepLink
    }
}
