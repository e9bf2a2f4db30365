/// What is left of a message's optional parts after the size budget dropped the first `dropped`
/// of them, in the documented order: data entries (last first), the subtitle (where the provider
/// shows one), then the deep link.
struct OptionalParts {
    var data: [PushMessage.KeyValue]
    var subtitle: String?
    var deepLink: String?

    init(_ message: PushMessage, dropped: Int, subtitleIsDroppable: Bool, dataFilter: (String) -> Bool = { _ in true })
    {
        var remaining = dropped
        data = message.data.filter { dataFilter($0.key) }
        let removedData = min(remaining, data.count)
        data.removeLast(removedData)
        remaining -= removedData
        subtitle = message.subtitle
        if subtitleIsDroppable, remaining > 0, subtitle != nil {
            subtitle = nil
            remaining -= 1
        }
        deepLink = remaining > 0 ? nil : message.deepLink
    }
}
