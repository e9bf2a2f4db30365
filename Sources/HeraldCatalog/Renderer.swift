import HeraldEvents
import Synchronization

/// Renders events with a catalog: extracts the kind's typed fields, formats money and dates in the
/// recipient's locale and time zone, formats the messages with ICU, and builds the deep link.
///
/// Compiled messages come from the catalog; number and date formatters are created once per
/// locale, currency, time zone and style and reused. Thread-safe.
public final class Renderer: Sendable {
    public let catalog: Catalog
    private let fallbacks = Atomic<Int>(0)
    private let moneyFormatters = Mutex<[FormatterKey: ICUNumberFormatter]>([:])
    private let dateFormatters = Mutex<[FormatterKey: ICUDateFormatter]>([:])

    /// A formatter cache key: locale, currency or time zone, and style.
    private struct FormatterKey: Hashable {
        var locale: String
        var detail: String
        var style: String = ""
    }

    public init(catalog: Catalog) {
        self.catalog = catalog
    }

    /// How many renders so far used a fallback locale (the recipient's locale was not in the
    /// catalog), for the metrics that show which translations users are missing.
    public var fallbackLocaleCount: Int { fallbacks.load(ordering: .relaxed) }

    /// A typed field value taken from an event.
    public enum FieldValue: Sendable, Hashable {
        case string(String)
        case int(Int64)
        case decimal(String)
        case money(amount: String, currency: String)
        case datetime(Timestamp)
        case list([String])
    }

    /// The longest user id a recipient may have: the directory's limit (`DirectoryEvent.maximumValueBytes`).
    public static let maximumRecipientBytes = 1024

    /// The user ids `event` is for, from the kind's `recipients` path: one string or a list of
    /// strings, deduplicated in order.
    ///
    /// - Throws: ``RenderError`` `.missingRecipient` if there is none, or the value is not a
    ///   string or a list of non-empty strings.
    public func recipients(of event: CloudEvent, kind: NotificationKind) throws(RenderError) -> [String] {
        var ids: [String] = []
        switch kind.recipients.value(in: event) {
        case .string(let id)?:
            ids = [id]
        case .array(let elements)?:
            ids.reserveCapacity(elements.count)
            // A search of the ids so far is quickest for the few most events name; a list of 40,000
            // (an event's 256 KB allows that many) searched that way took seconds of the worker.
            // Compared by their bytes: ids that differ only in their Unicode normalization are other
            // users (``OpaqueID``).
            var seen: Set<OpaqueID>? = elements.count > 16 ? Set(minimumCapacity: elements.count) : nil
            for element in elements {
                guard case .string(let id) = element else {
                    throw RenderError(
                        code: .missingRecipient,
                        message: "recipients (\(kind.recipients)) must be strings, not \(element.typeName)"
                    )
                }
                let isNew =
                    seen != nil ? seen!.insert(OpaqueID(id)).inserted : !ids.contains { $0.hasSameBytes(as: id) }
                if isNew { ids.append(id) }
            }
        case let other?:
            throw RenderError(
                code: .missingRecipient,
                message: "recipients (\(kind.recipients)) is \(other.typeName), not a string or a list"
            )
        case nil:
            break
        }
        guard !ids.isEmpty, ids.allSatisfy({ !$0.isEmpty }) else {
            throw RenderError(code: .missingRecipient, message: "the event names no recipient at \(kind.recipients)")
        }
        // No user in the directory has a longer id, or one with U+0000, and the id is part of the
        // decision ledger's key, whose entries PostgreSQL keeps under 2,704 bytes and whose text
        // cannot hold U+0000: such a batch would be refused, and retried for ever.
        if let long = ids.first(where: { $0.utf8.count > Self.maximumRecipientBytes }) {
            throw RenderError(
                code: .missingRecipient,
                message: "a recipient at \(kind.recipients) is \(long.utf8.count) bytes long; user ids are at most "
                    + "\(Self.maximumRecipientBytes)"
            )
        }
        if ids.contains(where: { $0.utf8Contains(0) }) {
            throw RenderError(
                code: .missingRecipient,
                message: "a recipient at \(kind.recipients) contains U+0000, which no user id does"
            )
        }
        return ids
    }

    /// Extracts the kind's fields from `event`. Missing optional fields are left out.
    ///
    /// - Throws: ``RenderError`` `.missingField` or `.fieldTypeMismatch`, naming the field.
    public func fields(of event: CloudEvent, kind: NotificationKind) throws(RenderError) -> [String: FieldValue] {
        var result: [String: FieldValue] = [:]
        for (field, value) in zip(kind.fields, try fieldValues(of: event, kind: kind)) {
            if let value { result[field.name] = value }
        }
        return result
    }

    /// An event's values of its kind's fields, found and type-checked once: the worker checks an
    /// event's fields before deciding it, and renders it in each locale its recipients use from
    /// the values the check found instead of finding them again.
    public struct CheckedFields: Sendable {
        let kind: String
        let values: [FieldValue?]
    }

    /// Checks that `event` has the kind's required fields with their declared types, and keeps
    /// their values for ``render(_:as:locale:timeZone:extra:useDigestSummary:fields:)``.
    ///
    /// - Throws: ``RenderError`` `.missingField` or `.fieldTypeMismatch`, naming the field.
    public func checkedFields(of event: CloudEvent, kind: NotificationKind) throws(RenderError) -> CheckedFields {
        CheckedFields(kind: kind.name, values: try fieldValues(of: event, kind: kind))
    }

    /// The kind's field values in the order of `kind.fields` (`nil` for a missing optional one):
    /// a few fields are found faster by position than by hashing their names.
    func fieldValues(of event: CloudEvent, kind: NotificationKind) throws(RenderError) -> [FieldValue?] {
        var values: [FieldValue?] = []
        values.reserveCapacity(kind.fields.count)
        for field in kind.fields { values.append(try fieldValue(field, of: event)) }
        return values
    }

    private func fieldValue(_ field: FieldDefinition, of event: CloudEvent) throws(RenderError) -> FieldValue? {
        // The event's own time needs no round trip through text.
        if field.path.root == "time", case .datetime = field.type, let time = event.time {
            return .datetime(time)
        }
        guard let raw = field.path.value(in: event) else {
            if field.required {
                throw RenderError(
                    code: .missingField,
                    message: "required field '\(field.name)' (\(field.path)) is missing"
                )
            }
            return nil
        }
        guard let value = Self.typed(raw, as: field.type) else {
            throw RenderError(
                code: .fieldTypeMismatch,
                message: "field '\(field.name)' (\(field.path)) is \(raw.typeName), not a valid \(field.type)"
            )
        }
        return value
    }

    static func typed(_ raw: JSONValue, as type: FieldType) -> FieldValue? {
        switch (type, raw) {
        case (.string, .string(let text)), (.url, .string(let text)): return .string(text)
        case (.int, .number(let text)): return Int64(text).map(FieldValue.int)
        case (.decimal, .number(let text)), (.decimal, .string(let text)):
            return isFiniteDecimal(text) ? .decimal(text) : nil
        case (.money, .object(let object)):
            guard case .string(let code)? = object["currency"], let currency = currencyCode(code) else { return nil }
            switch object["amount"] {
            case .number(let amount)?, .string(let amount)?:
                return isFiniteDecimal(amount) ? .money(amount: amount, currency: currency) : nil
            default: return nil
            }
        case (.datetime, .string(let text)): return Timestamp(rfc3339: text).map(FieldValue.datetime)
        case (.enumeration(let values), .string(let text)) where values.contains(text): return .string(text)
        case (.list, .array(let elements)):
            var strings: [String] = []
            for element in elements {
                guard case .string(let text) = element else { return nil }
                strings.append(text)
            }
            return .list(strings)
        default: return nil
        }
    }

    /// Whether `text` is a decimal number as JSON writes one (`-12`, `1234.50`, `1e3`) whose value
    /// is finite. `Double(text)` alone took `inf`, `nan` and `0x1p3` as amounts, which rendered as
    /// "∞ €" and "BTCNaN"; a JSON number as large as `1e400` is infinite too.
    static func isFiniteDecimal(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        func digits() -> Bool {
            let start = bytes.startIndex
            while let byte = bytes.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { bytes.removeFirst() }
            return bytes.startIndex != start
        }
        if bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
        guard digits() else { return false }
        if bytes.first == UInt8(ascii: ".") {
            bytes.removeFirst()
            guard digits() else { return false }
        }
        var exponent = false
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes.removeFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
            guard digits() else { return false }
            exponent = true
        }
        guard bytes.isEmpty else { return false }
        // Only an exponent or more than 308 digits can reach infinity: most amounts skip the
        // conversion, which runs for every money field of every event.
        return (!exponent && text.utf8.count <= 300) || Double(text)?.isFinite == true
    }

    /// An ISO 4217 currency code: three ASCII letters, upper-cased (`nok` is NOK); `nil` otherwise.
    static func currencyCode(_ text: String) -> String? {
        let letters = text.utf8
        let upper = { (byte: UInt8) in byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
        let lower = { (byte: UInt8) in byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
        guard letters.count == 3, letters.allSatisfy({ upper($0) || lower($0) }) else { return nil }
        return letters.allSatisfy(upper) ? text : text.uppercased()
    }

    /// Renders `event` as `kind` for a recipient.
    ///
    /// - Parameters:
    ///   - locale: the recipient's locale (BCP 47); falls back to its language, then the default.
    ///   - timeZone: the recipient's IANA time zone.
    ///   - extra: arguments beyond the kind's fields (a digest's `count`, `others`, `sender`).
    ///   - useDigestSummary: render the kind's digest summary as the body.
    ///   - fields: `event`'s fields as ``checkedFields(of:kind:)`` found them for `kind`, if the
    ///     caller has them; otherwise they are found here.
    ///   - plans: the caller's ``RenderPlans``, to resolve the kind and locale once rather than on
    ///     every render.
    /// - Throws: ``RenderError``.
    public func render(
        _ event: CloudEvent,
        as kind: NotificationKind,
        locale requested: String?,
        timeZone: String,
        extra: [(name: String, value: FieldValue)] = [],
        useDigestSummary: Bool = false,
        fields: CheckedFields? = nil,
        plans: RenderPlans? = nil
    ) throws(RenderError) -> RenderedNotification {
        let values: [FieldValue?]
        if let fields {
            precondition(fields.kind == kind.name, "fields checked for \(fields.kind) rendered as \(kind.name)")
            values = fields.values
        } else {
            values = try fieldValues(of: event, kind: kind)
        }
        let plan =
            plans?.plan(for: kind, requested: requested, in: self)
            ?? RenderPlan(kind: kind, requested: requested, catalog: catalog)
        let locale = plan.locale
        let isFallback = plan.isFallback
        if isFallback { fallbacks.add(1, ordering: .relaxed) }
        let presentation = kind.presentation
        // A silent or badge-only push has no text: nothing to format (its fields go to the data
        // and the badge only).
        let textless = !presentation.showsText
        var arguments: [(name: String, value: ICUValue)] = []
        arguments.reserveCapacity(textless ? 0 : kind.fields.count + extra.count)
        for (field, value) in zip(kind.fields, values) where !textless {
            guard let value else {
                // Messages show optional fields only inside {name, select, absent {…} other {…}}.
                arguments.append((field.name, .string("absent")))
                continue
            }
            arguments.append(
                (field.name, try icuValue(value, field: field, timeZone: timeZone, plan: plan))
            )
        }
        for (name, value) in extra where !textless {
            arguments.append((name, try icuValue(value, field: nil, timeZone: timeZone, plan: plan)))
        }
        func format(_ message: RenderPlan.Message) throws(RenderError) -> String {
            guard let compiled = message.compiled else {
                throw RenderError(code: .formatFailed, message: "message '\(message.key)' is missing")
            }
            do {
                return try compiled.format(arguments)
            } catch {
                throw RenderError(code: .formatFailed, message: "message '\(message.key)' in \(locale): \(error)")
            }
        }
        let body = textless ? "" : try format(useDigestSummary ? (plan.digestSummary ?? plan.body) : plan.body)
        var rendered = RenderedNotification(
            kind: kind.name,
            category: kind.category,
            app: kind.app,
            locale: locale,
            usedFallbackLocale: isFallback,
            title: textless
                ? "" : try format(plan.title).shortened(toUTF8Bytes: RenderedNotification.maximumHeadingBytes),
            subtitle: textless
                ? nil
                : try plan.subtitle.map { message throws(RenderError) in
                    try format(message).shortened(toUTF8Bytes: RenderedNotification.maximumHeadingBytes)
                },
            body: body,
            deepLink: nil,
            data: [],
            presentation: presentation
        )
        let fields = kind.fields
        let plain = { (name: String) -> String? in
            guard let index = fields.firstIndex(where: { $0.name == name }), let value = values[index] else {
                return nil
            }
            return Self.plainText(value)
        }
        if let pattern = kind.deepLinkPattern {
            guard let path = pattern.render(plain) else {
                // Only required fields are parameters (catalog check): the value is there, but empty,
                // and an empty path segment would open a different screen. Named, never quoted.
                let empty = pattern.parameters.first { plain($0)?.isEmpty ?? true } ?? "?"
                throw RenderError(
                    code: .missingField,
                    message: "deep-link parameter '\(empty)' of \(kind.name) is empty: it cannot be a path segment"
                )
            }
            let app = plan.app
            rendered.deepLink = RenderedNotification.DeepLink(
                path: path,
                scheme: app?.scheme,
                universalLinkHost: app?.universalLinkHost
            )
        }
        var data: [KeyValue] = []
        data.reserveCapacity(5 + presentation.dataFields.count)
        data.append(KeyValue("notificationType", kind.name))
        data.append(KeyValue("eventId", event.id))
        if let link = rendered.deepLink { data.append(KeyValue("deepLinkPath", link.path)) }
        if let time = event.time { data.append(KeyValue("timestamp", plans?.text(of: time) ?? time.description)) }
        for name in presentation.dataFields {
            if let value = plain(name) { data.append(KeyValue(name, value)) }
        }
        data.append(KeyValue("version", "1"))
        rendered.data = data
        // A placeholder without a value leaves the option out rather than sending a broken key.
        rendered.collapseKey = kind.collapseKeyTemplate?.render(plain)
        rendered.threadID = kind.threadIDTemplate?.render(plain)
        switch presentation.badge {
        case .constant(let count)?: rendered.badge = count
        case .field(let name, let index)?:
            // An optional field left out leaves the badge as it is.
            if case .int(let count)? = values[index] {
                guard count >= 0 && count <= Int64(BadgeSource.maximumCount) else {
                    throw RenderError(
                        code: .fieldTypeMismatch,
                        message: "field '\(name)' is not a badge count (0 to \(BadgeSource.maximumCount))"
                    )
                }
                rendered.badge = Int(count)
            }
        case nil: break
        }
        if let image = presentation.image, case .string(let url)? = values[image.index] {
            // The phone downloads it: only https is fetched (iOS's App Transport Security), and a
            // value that is not a URL would be fetched from nowhere. Named, never quoted.
            guard Self.isImageURL(url) else {
                throw RenderError(
                    code: .fieldTypeMismatch,
                    message: "field '\(image.name)' is not an https URL of an image"
                )
            }
            rendered.imageURL = url
        }
        return rendered
    }

    /// Whether `text` is an absolute https URL a phone can fetch: `https://`, a host, and no
    /// spaces or control characters.
    static func isImageURL(_ text: String) -> Bool {
        // Read in place: a render must not copy the URL to look at it.
        var rest = text.utf8[...]
        guard !rest.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return false }
        for expected in "https://".utf8 {
            guard let byte = rest.popFirst() else { return false }
            // The scheme's letters in any case (HTTPS://); `:` and `/` exactly.
            let lowered = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            guard lowered == expected else { return false }
        }
        guard let first = rest.first else { return false }
        return first != UInt8(ascii: "/") && first != UInt8(ascii: "?") && first != UInt8(ascii: "#")
    }

    /// `value` for ICU, numbers and dates formatted in `plan`'s formatting locale. The plan's own
    /// formatters (``RenderPlan/dateFormatter(timeZone:style:)``) are tried before the renderer's,
    /// which it keeps: they are kept by time zone, style and currency only, so the locale must be
    /// the plan's.
    private func icuValue(
        _ value: FieldValue,
        field: FieldDefinition?,
        timeZone: String,
        plan: RenderPlan
    ) throws(RenderError) -> ICUValue {
        let locale = plan.formattingLocale
        switch value {
        case .string(let text): return .string(text)
        case .int(let number): return .integer(number)
        case .decimal(let text): return .decimal(text)
        case .list(let items): return .string(items.joined(separator: ", "))
        case .money(let amount, let currency):
            // ISO 4217's "no currency": ICU would print its generic sign (¤1,234.50) or the code
            // itself, neither of which a reader should see. The amount, as a number.
            if currency == "XXX" { return .decimal(amount) }
            do {
                let formatter: ICUNumberFormatter
                if let kept = plan.moneyFormatter(currency: currency) {
                    formatter = kept
                } else {
                    formatter = try moneyFormatter(locale: locale, currency: currency)
                    plan.keep(formatter, currency: currency)
                }
                return .string(try formatter.format(decimal: amount))
            } catch {
                throw RenderError(
                    code: .fieldTypeMismatch,
                    message: "field '\(field?.name ?? "?")' is not valid money: \(error)"
                )
            }
        case .datetime(let moment):
            let style = field?.style ?? "medium"
            let formatter: ICUDateFormatter
            if let kept = plan.dateFormatter(timeZone: timeZone, style: style) {
                formatter = kept
            } else {
                formatter = try dateFormatter(locale: locale, timeZone: timeZone, style: style)
                plan.keep(formatter, timeZone: timeZone, style: style)
            }
            return .string(formatter.format(epochMilliseconds: Double(moment.epochMilliseconds)))
        }
    }

    private func moneyFormatter(locale: String, currency: String) throws(ICUError) -> ICUNumberFormatter {
        let key = FormatterKey(locale: locale, detail: currency)
        if let cached = moneyFormatters.withLock({ $0[key] }) { return cached }
        let patterns = catalog.settings.moneyPatterns
        let language = locale.split(separator: "-").first.map(String.init) ?? locale
        let formatter = try ICUNumberFormatter(
            locale: locale,
            currency: currency,
            pattern: patterns[locale] ?? patterns[language]
        )
        moneyFormatters.withLock { $0[key] = formatter }
        return formatter
    }

    private func dateFormatter(locale: String, timeZone: String, style: String) throws(RenderError) -> ICUDateFormatter
    {
        let key = FormatterKey(locale: locale, detail: timeZone, style: style)
        if let cached = dateFormatters.withLock({ $0[key] }) { return cached }
        do {
            let formatter = try ICUDateFormatter(locale: locale, timeZone: timeZone, style: style)
            dateFormatters.withLock { $0[key] = formatter }
            return formatter
        } catch {
            throw RenderError(code: .badTimeZone, message: "cannot format dates for time zone '\(timeZone)': \(error)")
        }
    }

    /// A field value as plain text, for deep links, data and collapse keys.
    static func plainText(_ value: FieldValue) -> String {
        switch value {
        case .string(let text): text
        case .int(let number): String(number)
        case .decimal(let text): text
        case .money(let amount, let currency): "\(amount) \(currency)"
        case .datetime(let moment): moment.description
        case .list(let items): items.joined(separator: ",")
        }
    }
}

extension Renderer {
    /// Renders one digest of `events` (oldest first, all of `kind`): the latest event's notification
    /// with the kind's digest summary as its body — "5 new messages from Ana and 2 others": `count`
    /// is the number of events, `sender` the latest event's `sender` field, and `others` how many
    /// other distinct senders there were. `plans` are the caller's, as for a single render.
    ///
    /// - Throws: ``RenderError`` if `events` is empty or the latest event does not render.
    public func renderDigest(
        _ events: [CloudEvent],
        as kind: NotificationKind,
        locale: String?,
        timeZone: String,
        plans: RenderPlans? = nil
    ) throws(RenderError) -> RenderedNotification {
        guard let latest = events.last else {
            throw RenderError(code: .formatFailed, message: "a digest of \(kind.name) needs at least one event")
        }
        var others = 0
        if let sender = kind.field(named: "sender") {
            var seen: Set<String> = []
            for event in events {
                if let name = sender.path.value(in: event)?.stringValue { seen.insert(name) }
            }
            let latestSender = sender.path.value(in: latest)?.stringValue
            others = seen.count - (latestSender.map { seen.contains($0) ? 1 : 0 } ?? 0)
        }
        return try render(
            latest,
            as: kind,
            locale: locale,
            timeZone: timeZone,
            extra: [("count", .int(Int64(events.count))), ("others", .int(Int64(others)))],
            useDigestSummary: true,
            plans: plans
        )
    }
}
