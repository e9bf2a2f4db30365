import HeraldCatalog

/// A batch's event types: how many events of each it held, and the catalog's kinds for each.
///
/// A batch carries a handful of types. Finding one here compares its text with theirs, where the
/// counters' and the catalog's dictionaries hashed it twice per event: two of the dozen string
/// hashes an event cost the worker. Past ``capacity`` distinct types (a producer inventing them)
/// the others are counted and looked up directly, so a batch never scans a long list.
struct EventTypeTable {
    static let capacity = 32
    private var types: [(type: String, kinds: [NotificationKind], count: Int)] = []

    /// Counts one event of `type` and returns the catalog's kinds for it (see
    /// ``Catalog/kinds(forEventType:)``).
    mutating func count(
        _ type: String,
        in catalog: Catalog,
        counters: inout WorkerStatistics.Counters
    ) -> [NotificationKind] {
        if let index = types.firstIndex(where: { $0.type == type }) {
            types[index].count += 1
            return types[index].kinds
        }
        let kinds = catalog.kinds(forEventType: type)
        if types.count < Self.capacity {
            types.append((type, kinds, 1))
        } else {
            counters.eventsByType[type, default: 0] += 1
        }
        return kinds
    }

    /// Adds the events counted here to `counters`.
    func fold(into counters: inout WorkerStatistics.Counters) {
        for entry in types { counters.eventsByType[entry.type, default: 0] += entry.count }
    }
}
