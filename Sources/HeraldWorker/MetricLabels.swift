/// Label values of `/metrics` counters. Prometheus keeps a series for every value a label takes;
/// values that come from outside (an event's type, a provider's reason) could take any number,
/// growing the process's counters, every scrape and Prometheus itself without bound.
public enum MetricLabels {
    /// Where counts past the limits go.
    public static let other = "(other)"

    /// Adds `counts` to `total`, keeping at most `limit` values in it, ``other`` included, each at
    /// most `maximumBytes` of UTF-8: a value already there keeps counting under its name; a new one
    /// past the limit, or a longer one, counts as ``other``. The first values seen keep their names.
    public static func add(
        _ counts: [String: Int],
        into total: inout [String: Int],
        limit: Int = 200,
        maximumBytes: Int = 128
    ) {
        for (value, count) in counts {
            // A place is kept for `other` until it is there.
            let room = limit - total.count - (total[other] == nil ? 1 : 0)
            let named = total[value] != nil || (room > 0 && value.utf8.count <= maximumBytes)
            total[named ? value : other, default: 0] += count
        }
    }
}
