import HeraldEvents

/// A loaded, type-checked catalog. Immutable; share one across threads.
public final class Catalog: Sendable {
    public let settings: CatalogSettings
    public let kinds: [NotificationKind]
    let bundles: [String: MessageBundle]
    private let kindsByEventType: [String: [NotificationKind]]

    init(settings: CatalogSettings, kinds: [NotificationKind], bundles: [String: MessageBundle]) {
        self.settings = settings
        self.kinds = kinds
        self.bundles = bundles
        var byType: [String: [NotificationKind]] = [:]
        for kind in kinds {
            for type in kind.eventTypes { byType[type, default: []].append(kind) }
        }
        // Kinds with a condition are tried before the one without.
        kindsByEventType = byType.mapValues {
            $0.sorted { ($0.condition != nil ? 0 : 1) < ($1.condition != nil ? 0 : 1) }
        }
    }

    /// The kind that handles `event`, or `nil` if no kind claims its type (or no condition matches).
    public func kind(for event: CloudEvent) -> NotificationKind? {
        kind(for: event, among: kinds(forEventType: event.type))
    }

    /// The kinds that claim events of `type`, in the order ``kind(for:among:)`` tries them; empty
    /// if none does.
    public func kinds(forEventType type: String) -> [NotificationKind] {
        kindsByEventType[type] ?? []
    }

    /// ``kind(for:)`` with the kinds of `event`'s type already found (``kinds(forEventType:)``),
    /// for a caller that remembers them across events.
    public func kind(for event: CloudEvent, among candidates: [NotificationKind]) -> NotificationKind? {
        for kind in candidates {
            guard let condition = kind.condition else { return kind }
            switch condition.path.value(in: event) {
            case .string(let value)? where value == condition.value: return kind
            case .number(let value)? where value == condition.value: return kind
            case .bool(let value)? where (value ? "true" : "false") == condition.value: return kind
            default: continue
            }
        }
        return nil
    }

    /// The kind called `name`.
    public func kind(named name: String) -> NotificationKind? { kinds.first { $0.name == name } }

    /// The bundle locale to use for `requested`: `nb-NO` → `nb-NO` if the catalog has it, else `nb`,
    /// else the default locale. The second value says whether a fallback was used.
    public func resolveLocale(_ requested: String?) -> (locale: String, isFallback: Bool) {
        guard let requested, !requested.isEmpty else { return (settings.defaultLocale, true) }
        if bundles[requested] != nil { return (requested, false) }
        let tag: String
        if requested.utf8Contains(UInt8(ascii: "_")) {
            tag = requested.replacingUnderscores()
            if bundles[tag] != nil { return (tag, false) }
        } else {
            tag = requested
        }
        // `nb-NO` → `nb`: runs for most renders, so prefixes of the tag's bytes rather than split
        // and joined parts or Characters (a tag's prefix is short enough to be a small string: no
        // allocation).
        var shorter = tag.utf8[...]
        while let dash = shorter.lastIndex(of: UInt8(ascii: "-")) {
            shorter = shorter[..<dash]
            let candidate = String(Substring(shorter))
            if bundles[candidate] != nil { return (candidate, true) }
        }
        if let caseInsensitive = bundles.keys.first(where: { $0.lowercased() == tag.lowercased() }) {
            return (caseInsensitive, false)
        }
        return (settings.defaultLocale, true)
    }
}

extension String {
    /// `pl_PL` as the BCP 47 tag `pl-PL`.
    func replacingUnderscores() -> String {
        String(map { $0 == "_" ? "-" : $0 })
    }
}
