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
/// Not thread-safe: a thread of work makes its own (the worker one for each run of events it
/// builds) and drops it after. Used with another ``Renderer`` it starts again.
public final class RenderPlans {
    /// The renderer and kinds are held, not only their addresses, so that a freed one's address
    /// reused by a new one can never find the old plans. Used by one thread at a time, neither is
    /// checked for exclusive access at run time (two calls into the runtime on every render).
    @exclusivity(unchecked) private var renderer: Renderer?
    /// By kind; a kind's plans by requested locale. A worker sees a handful of each.
    @exclusivity(unchecked) private var kinds: [(kind: NotificationKind.Storage, plans: [RenderPlan])] = []

    public init() {}

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
}
