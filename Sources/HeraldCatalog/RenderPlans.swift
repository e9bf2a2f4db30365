import HeraldEvents

/// What rendering a kind in a requested locale comes to — the catalog locale it resolves to, the
/// compiled messages of the kind's title, subtitle, body and digest summary in that locale, and
/// the kind's app — remembered by one caller for the renders it does after.
///
/// Without it every render resolves the locale and finds the bundle, each message and the app in
/// the catalog's dictionaries: in `herald bench pipeline` the worker's string hashes per event went
/// from 18.3 to 11.8 with it (uprobes on `Hasher._finalize`). With it a render finds its plan by
/// the kind's identity and the requested locale's text, among the few the caller has seen.
///
/// Not thread-safe: a thread of work keeps its own (each of the worker's build threads one for as
/// long as it runs). Used with another ``Renderer`` it starts again; a kind's plans start again
/// once there are ``maximumPerKind`` of them.
public final class RenderPlans {
    /// The renderer and kinds are held, not only their addresses, so that a freed one's address
    /// reused by a new one can never find the old plans. Used by one thread at a time, neither is
    /// checked for exclusive access at run time (two calls into the runtime on every render).
    @exclusivity(unchecked) private var renderer: Renderer?
    /// By kind; a kind's plans by requested locale. A worker sees a handful of each.
    @exclusivity(unchecked) private var kinds: [(kind: NotificationKind.Storage, plans: [RenderPlan])] = []
    /// The most plans kept for one kind: past it, the kind's plans start again. A worker's build
    /// thread keeps its plans for as long as it runs, and a plan is made for each requested locale
    /// as a device names it, so a directory full of odd locale tags must not grow them without end
    /// (nor the search through them on every render).
    static let maximumPerKind = 64
    /// The last time ``text(of:)`` wrote, and its text.
    @exclusivity(unchecked) private var lastTime: (time: Timestamp, text: String)?

    public init() {}

    /// `time`'s ``Timestamp/description``, made once for a run of renders of the same time: events
    /// that come in bursts share their millisecond, and each text (24 bytes, too long for a string
    /// kept inline) was an allocation and a formatting per render.
    func text(of time: Timestamp) -> String {
        if let lastTime, lastTime.time == time { return lastTime.text }
        let text = time.description
        lastTime = (time, text)
        return text
    }

    /// How many plans are kept, over every kind.
    var count: Int { kinds.reduce(0) { $0 + $1.plans.count } }

    func plan(for kind: NotificationKind, requested: String?, in renderer: Renderer) -> RenderPlan {
        if self.renderer !== renderer {
            // A catalog's kinds and locales mean nothing to another one.
            self.renderer = renderer
            kinds.removeAll()
        }
        let storage = kind.storage
        let slot: Int
        if let found = kinds.firstIndex(where: { $0.kind === storage }) {
            if let plan = kinds[found].plans.first(where: { $0.requested == requested }) { return plan }
            if kinds[found].plans.count >= Self.maximumPerKind { kinds[found].plans.removeAll() }
            slot = found
        } else {
            slot = kinds.count
            kinds.append((storage, []))
        }
        let plan = RenderPlan(kind: kind, requested: requested, catalog: renderer.catalog)
        kinds[slot].plans.append(plan)
        return plan
    }
}

/// One kind in one requested locale, resolved against a catalog (see ``RenderPlans``).
final class RenderPlan {
    /// A message of the kind, by key: `nil` if neither the locale's bundle nor the default one has it
    /// (which the catalog's type check rules out), reported when a render needs it.
    struct Message {
        let key: String
        let compiled: ICUMessage?
    }

    let requested: String?
    /// The catalog locale the messages come from, and whether it is a fallback.
    let locale: String
    let isFallback: Bool
    /// The locale numbers and dates are formatted in: the requested one, which may be more specific
    /// than the catalog's (`nb-NO` formats as Norway does with the `nb` messages).
    let formattingLocale: String
    let title: Message
    let subtitle: Message?
    let body: Message
    let digestSummary: Message?
    let app: CatalogSettings.App?
    /// The formatters this plan's renders used, by time zone and style, and by currency: found
    /// here with a compare or two. The renderer's own caches, shared by every thread, take a lock
    /// and hash three strings per look-up (about 3,900 instructions per date in `herald bench
    /// pipeline`, callgrind). At most ``keptFormatters`` of each: recipients of one locale may live
    /// in many time zones, and a long list would cost more to search than the shared cache.
    @exclusivity(unchecked) private var dateFormatters:
        [(timeZone: String, style: String, formatter: ICUDateFormatter)] = []
    @exclusivity(unchecked) private var moneyFormatters: [(currency: String, formatter: ICUNumberFormatter)] = []
    static let keptFormatters = 8

    init(kind: NotificationKind, requested: String?, catalog: Catalog) {
        self.requested = requested
        (locale, isFallback) = catalog.resolveLocale(requested)
        formattingLocale =
            requested.map { $0.utf8Contains(UInt8(ascii: "_")) ? $0.replacingUnderscores() : $0 } ?? locale
        let bundle = catalog.bundles[locale]
        let defaultBundle = catalog.bundles[catalog.settings.defaultLocale]
        func message(_ key: String) -> Message {
            // The type check guarantees the default bundle has every key; other bundles fall back.
            Message(key: key, compiled: bundle?.messages[key] ?? defaultBundle?.messages[key])
        }
        let presentation = kind.presentation
        title = message(presentation.title)
        subtitle = presentation.subtitle.map(message)
        body = message(presentation.body)
        digestSummary = kind.digestSummary.map(message)
        app = catalog.settings.apps[kind.app]
    }

    func dateFormatter(timeZone: String, style: String) -> ICUDateFormatter? {
        dateFormatters.first { $0.timeZone == timeZone && $0.style == style }?.formatter
    }

    func keep(_ formatter: ICUDateFormatter, timeZone: String, style: String) {
        if dateFormatters.count < Self.keptFormatters { dateFormatters.append((timeZone, style, formatter)) }
    }

    func moneyFormatter(currency: String) -> ICUNumberFormatter? {
        moneyFormatters.first { $0.currency == currency }?.formatter
    }

    func keep(_ formatter: ICUNumberFormatter, currency: String) {
        if moneyFormatters.count < Self.keptFormatters { moneyFormatters.append((currency, formatter)) }
    }
}
