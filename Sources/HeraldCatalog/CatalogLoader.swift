import Foundation
import HeraldEvents
import Yams

/// Loads a catalog directory and type-checks it before anything is consumed.
///
/// Layout: `catalog.yaml` (settings), `kinds/*.yaml` (one notification kind each) and
/// `messages/<locale>.json` (one ICU MessageFormat bundle per locale). See `docs/catalog.md`.
public enum CatalogLoader {
    /// Loads and checks the catalog at `directory`.
    ///
    /// - Returns: the catalog and its warnings.
    /// - Throws: ``CatalogError`` listing every error (and warning) with its file and key.
    public static func load(directory: String) throws(CatalogError) -> (catalog: Catalog, warnings: [CatalogDiagnostic])
    {
        var context = Context(directory: directory)
        let catalog = context.load()
        let errors = context.diagnostics.filter { $0.severity == .error }
        guard errors.isEmpty, let catalog else { throw CatalogError(diagnostics: context.diagnostics) }
        return (catalog, context.diagnostics)
    }
}

// MARK: Raw file formats

// Each declares its coding keys so that the keys a file may hold (``KeySchema``) are the ones
// decoding reads, by construction.

private struct RawSettings: Decodable {
    var defaultLocale: String
    var locales: [String]
    var categories: [String]
    var channels: [String]
    var apps: [String: RawApp]
    var moneyPatterns: [String: String]?
    var policies: [String: RawCategoryRules]?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case defaultLocale, locales, categories, channels, apps, moneyPatterns, policies
    }

    static let schema = KeySchema.keys(
        CodingKeys.allCases.map(\.rawValue),
        nested: [
            CodingKeys.apps.rawValue: .entries(.values(RawApp.CodingKeys.allCases.map(\.rawValue))),
            CodingKeys.policies.rawValue: .entries(RawCategoryRules.schema),
        ]
    )
}

private struct RawCategoryRules: Decodable {
    var alwaysDelivered: Bool?
    var enabledByDefault: Bool?
    var quietHours: String?
    var throttle: [RawThrottle]?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case alwaysDelivered, enabledByDefault, quietHours, throttle
    }

    static let schema = KeySchema.keys(
        CodingKeys.allCases.map(\.rawValue),
        nested: [CodingKeys.throttle.rawValue: .list(.values(RawThrottle.CodingKeys.allCases.map(\.rawValue)))]
    )
}

private struct RawThrottle: Decodable {
    var name: String?
    var limit: Int
    var window: String
    var overLimit: String
    var kind: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, limit, window, overLimit, kind
    }
}

private struct RawApp: Decodable {
    var scheme: String?
    var universalLinkHost: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case scheme, universalLinkHost
    }
}

private struct RawKind: Decodable {
    var kind: String
    var events: [String]
    var when: String?
    var category: String
    var app: String
    var recipients: String
    var fields: [String: RawField]
    var deepLink: String?
    var push: RawPush
    var digest: RawDigest?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, events, when, category, app, recipients, fields, deepLink, push, digest
    }

    static let schema = KeySchema.keys(
        CodingKeys.allCases.map(\.rawValue),
        nested: [
            CodingKeys.fields.rawValue: .entries(.values(RawField.CodingKeys.allCases.map(\.rawValue))),
            CodingKeys.push.rawValue: .values(RawPush.CodingKeys.allCases.map(\.rawValue)),
            CodingKeys.digest.rawValue: .values(RawDigest.CodingKeys.allCases.map(\.rawValue)),
        ]
    )
}

private struct RawField: Decodable {
    var type: String
    var path: String
    var required: Bool?
    var values: [String]?
    var style: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case type, path, required, values, style
    }
}

private struct RawPush: Decodable {
    /// Required unless the push is silent or only sets the badge (checked with the other rules,
    /// naming the key).
    var title: String?
    var subtitle: String?
    var body: String?
    var threadId: String?
    var iosCategory: String?
    var sound: String?
    var interruptionLevel: String?
    var androidChannel: String?
    var collapseKey: String?
    var ttl: Int?
    var priority: String?
    var data: [String]?
    var badge: RawBadge?
    var image: String?
    var silent: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case title, subtitle, body, threadId, iosCategory, sound, interruptionLevel, androidChannel, collapseKey, ttl
        case priority, data, badge, image, silent
    }

    /// The keys of what a phone shows, which a silent push has none of.
    var shownKeys: [(key: CodingKeys, present: Bool)] {
        [
            (.title, title != nil), (.subtitle, subtitle != nil), (.body, body != nil), (.threadId, threadId != nil),
            (.iosCategory, iosCategory != nil), (.sound, sound != nil), (.interruptionLevel, interruptionLevel != nil),
            (.androidChannel, androidChannel != nil), (.badge, badge != nil), (.image, image != nil),
        ]
    }
}

/// `push.badge`: a number, or the name of an `int` field.
private enum RawBadge: Decodable {
    case count(Int)
    case field(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let count = try? container.decode(Int.self) {
            self = .count(count)
        } else {
            self = .field(try container.decode(String.self))
        }
    }
}

private struct RawDigest: Decodable {
    var summary: String

    enum CodingKeys: String, CodingKey, CaseIterable {
        case summary
    }
}

// MARK: Loading and checking

private struct Context {
    let directory: String
    var diagnostics: [CatalogDiagnostic] = []

    init(directory: String) {
        self.directory = directory
    }

    mutating func error(_ file: String, _ key: String, _ message: String) {
        diagnostics.append(CatalogDiagnostic(.error, file: file, key: key, message))
    }

    mutating func warning(_ file: String, _ key: String, _ message: String) {
        diagnostics.append(CatalogDiagnostic(.warning, file: file, key: key, message))
    }

    func read(_ file: String) -> Data? {
        FileManager.default.contents(atPath: (directory as NSString).appendingPathComponent(file))
    }

    /// The file decoded, with an error for each key `schema` does not know (decoding alone skips
    /// them: a misspelt optional key was silently without effect).
    mutating func decodeYAML<T: Decodable>(_ type: T.Type, file: String, schema: KeySchema) -> T? {
        guard let data = read(file), let text = String(data: data, encoding: .utf8) else {
            error(file, "", "cannot read the file")
            return nil
        }
        let unknown = schema.unknownKeys(in: text)
        for (key, message) in unknown { error(file, key, message) }
        do {
            return try YAMLDecoder().decode(T.self, from: text)
        } catch let decoding as DecodingError {
            let (key, message) = Self.describe(decoding)
            error(file, key, message)
        } catch {
            self.error(file, "", "invalid YAML: \(error)")
        }
        return nil
    }

    static func describe(_ error: DecodingError) -> (String, String) {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return (path(context.codingPath + [key]), "is required")
        case .typeMismatch(let type, let context):
            return (path(context.codingPath), "must be \(type)")
        case .valueNotFound(let type, let context):
            return (path(context.codingPath), "must be \(type), not empty")
        case .dataCorrupted(let context):
            return (path(context.codingPath), context.debugDescription)
        @unknown default:
            return ("", "\(error)")
        }
    }

    mutating func load() -> Catalog? {
        guard let raw = decodeYAML(RawSettings.self, file: "catalog.yaml", schema: RawSettings.schema) else {
            return nil
        }
        let settings = CatalogSettings(
            defaultLocale: raw.defaultLocale,
            locales: raw.locales,
            categories: raw.categories,
            channels: raw.channels,
            apps: raw.apps.mapValues {
                CatalogSettings.App(scheme: $0.scheme, universalLinkHost: $0.universalLinkHost)
            },
            moneyPatterns: raw.moneyPatterns ?? [:]
        )
        if !settings.locales.contains(settings.defaultLocale) {
            error("catalog.yaml", "defaultLocale", "'\(settings.defaultLocale)' is not one of the locales")
        }
        for (name, app) in settings.apps where app.scheme == nil && app.universalLinkHost == nil {
            error("catalog.yaml", "apps.\(name)", "needs a scheme, a universalLinkHost, or both")
        }
        let bundles = loadBundles(settings)
        let kinds = loadKinds(settings)
        checkMessages(kinds: kinds, bundles: bundles, settings: settings)
        checkEventTypes(kinds)
        var checked = settings
        checked.policies = policies(raw.policies ?? [:], settings: settings, kinds: Set(kinds.map(\.name)))
        return Catalog(settings: checked, kinds: kinds, bundles: bundles)
    }

    // MARK: Policies

    mutating func policies(
        _ raw: [String: RawCategoryRules],
        settings: CatalogSettings,
        kinds: Set<String>
    ) -> [String: CatalogSettings.CategoryRules] {
        var policies: [String: CatalogSettings.CategoryRules] = [:]
        for (category, rules) in raw.sorted(by: { $0.key < $1.key }) {
            let key = "policies.\(category)"
            if !settings.categories.contains(category) {
                error("catalog.yaml", key, "unknown category '\(category)' (not in categories)")
            }
            if let quiet = rules.quietHours, !["defer", "drop", "ignore"].contains(quiet) {
                error("catalog.yaml", "\(key).quietHours", "must be defer, drop or ignore, not '\(quiet)'")
            }
            var throttle: [CatalogSettings.CategoryRules.Throttle]?
            if let rawRules = rules.throttle {
                throttle = []
                for (index, rule) in rawRules.enumerated() {
                    let ruleKey = "\(key).throttle[\(index)]"
                    if rule.limit < 0 { error("catalog.yaml", "\(ruleKey).limit", "must not be negative") }
                    if !["drop", "digest", "defer"].contains(rule.overLimit) {
                        error(
                            "catalog.yaml",
                            "\(ruleKey).overLimit",
                            "must be drop, digest or defer, not '\(rule.overLimit)'"
                        )
                    }
                    if let kind = rule.kind, !kinds.contains(kind) {
                        error("catalog.yaml", "\(ruleKey).kind", "unknown kind '\(kind)'")
                    }
                    guard let seconds = Self.seconds(rule.window), seconds > 0, seconds <= Self.maximumWindowSeconds
                    else {
                        error(
                            "catalog.yaml",
                            "\(ruleKey).window",
                            "must be a duration from 1s to 366d, such as 30s, 15m, 1h or 7d"
                        )
                        continue
                    }
                    throttle?.append(
                        .init(
                            name: rule.name ?? [category, rule.kind].compactMap { $0 }.joined(separator: "."),
                            limit: rule.limit,
                            windowSeconds: seconds,
                            overLimit: rule.overLimit,
                            kind: rule.kind
                        )
                    )
                }
            }
            policies[category] = .init(
                alwaysDelivered: rules.alwaysDelivered,
                enabledByDefault: rules.enabledByDefault,
                quietHours: rules.quietHours,
                throttle: throttle
            )
        }
        return policies
    }

    /// `30s`, `15m`, `1h`, `7d` in seconds; `nil` for anything else, including a count too large
    /// for 64 bits of seconds (which trapped: `catalog check` crashed instead of naming the key).
    static func seconds(_ text: String) -> Int64? {
        guard let unit = text.last, let count = Int64(text.dropLast()) else { return nil }
        let scale: Int64
        switch unit {
        case "s": scale = 1
        case "m": scale = 60
        case "h": scale = 3600
        case "d": scale = 86_400
        default: return nil
        }
        let (seconds, overflow) = count.multipliedReportingOverflow(by: scale)
        return overflow ? nil : seconds
    }

    /// The longest throttle window: a year and a day. Windows are counted in milliseconds of event
    /// time; a window beyond any use would overflow that arithmetic for every event it applies to.
    static let maximumWindowSeconds: Int64 = 366 * 86_400

    /// The longest `push.ttl`: 28 days, the most FCM accepts (it refuses a message with more). At
    /// least a second: a notification whose time to live is 0 is expired as soon as it is decided.
    static let timeToLiveSeconds = 1...2_419_200

    // MARK: Bundles

    mutating func loadBundles(_ settings: CatalogSettings) -> [String: MessageBundle] {
        var bundles: [String: MessageBundle] = [:]
        for locale in settings.locales {
            let file = "messages/\(locale).json"
            guard let data = read(file) else {
                error(file, "", "the bundle of locale '\(locale)' is missing")
                continue
            }
            let json: JSONValue
            do {
                json = try JSONParser().parse(Array(data))
            } catch {
                self.error(file, "", "invalid JSON: \(error)")
                continue
            }
            guard case .object(let object) = json else {
                error(file, "", "a bundle must be a JSON object of message keys")
                continue
            }
            var messages: [String: ICUMessage] = [:]
            var patterns: [String: String] = [:]
            for (key, value) in object {
                guard case .string(let pattern) = value else {
                    error(file, key, "a message must be a string, not \(value.typeName)")
                    continue
                }
                // Kept even when invalid, so the key is not also reported as missing.
                patterns[key] = pattern
                do {
                    messages[key] = try ICUMessage(locale: locale, pattern: pattern)
                } catch {
                    self.error(file, key, "invalid MessageFormat: \(error)")
                }
            }
            bundles[locale] = MessageBundle(locale: locale, file: file, messages: messages, patterns: patterns)
        }
        guard let defaults = bundles[settings.defaultLocale] else { return bundles }
        for (locale, bundle) in bundles.sorted(by: { $0.key < $1.key }) where locale != settings.defaultLocale {
            for key in defaults.patterns.keys.sorted() where bundle.patterns[key] == nil {
                error(bundle.file, key, "missing: the default locale '\(settings.defaultLocale)' has this key")
            }
            for key in bundle.patterns.keys.sorted() where defaults.patterns[key] == nil {
                warning(bundle.file, key, "not in the default locale '\(settings.defaultLocale)'; it is never used")
            }
        }
        return bundles
    }

    // MARK: Kinds

    mutating func loadKinds(_ settings: CatalogSettings) -> [NotificationKind] {
        let kindsDirectory = (directory as NSString).appendingPathComponent("kinds")
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: kindsDirectory)) ?? [])
            .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
        if files.isEmpty { error("kinds/", "", "no notification kinds (kinds/*.yaml)") }
        var kinds: [NotificationKind] = []
        for name in files {
            let file = "kinds/\(name)"
            guard let raw = decodeYAML(RawKind.self, file: file, schema: RawKind.schema) else { continue }
            if let kind = makeKind(raw, file: file, settings: settings) { kinds.append(kind) }
        }
        return kinds
    }

    /// The longest kind name accepted.
    static let maximumKindNameBytes = 128

    mutating func makeKind(_ raw: RawKind, file: String, settings: CatalogSettings) -> NotificationKind? {
        let errorsBefore = diagnostics.count
        // A kind's name is in the decision ledger's key beside an event id and a user id, whose
        // entries PostgreSQL keeps under 2,704 bytes, and in every outbound message and metric.
        if raw.kind.isEmpty || raw.kind.utf8.count > Self.maximumKindNameBytes {
            error(file, "kind", "must be a name of 1 to \(Self.maximumKindNameBytes) bytes")
        }
        if !settings.categories.contains(raw.category) {
            error(
                file,
                "category",
                "unknown category '\(raw.category)' (catalog.yaml declares \(settings.categories.joined(separator: ", ")))"
            )
        }
        if settings.apps[raw.app] == nil {
            error(file, "app", "unknown app '\(raw.app)'")
        }
        if let channel = raw.push.androidChannel, !settings.channels.contains(channel) {
            error(
                file,
                "push.androidChannel",
                "unknown channel '\(channel)' (catalog.yaml declares \(settings.channels.joined(separator: ", ")))"
            )
        }
        if raw.events.isEmpty { error(file, "events", "must name at least one event type") }
        let recipients = FieldPath(raw.recipients)
        if recipients == nil { error(file, "recipients", "'\(raw.recipients)' is not a path such as data.userId") }
        var fields: [FieldDefinition] = []
        // Names declared, even those with a broken definition (reported once, not again by every
        // place that uses them).
        let declared = Set(raw.fields.keys)
        for (name, field) in raw.fields.sorted(by: { $0.key < $1.key }) {
            guard let path = FieldPath(field.path) else {
                error(file, "fields.\(name).path", "'\(field.path)' is not a path such as data.order.id")
                continue
            }
            let type: FieldType
            switch field.type {
            case "string": type = .string
            case "int": type = .int
            case "decimal": type = .decimal
            case "money": type = .money
            case "datetime": type = .datetime
            case "url": type = .url
            case "list": type = .list
            case "enum":
                guard let values = field.values, !values.isEmpty else {
                    error(file, "fields.\(name).values", "an enum needs its values")
                    continue
                }
                type = .enumeration(values)
            default:
                error(
                    file,
                    "fields.\(name).type",
                    "unknown type '\(field.type)' (string, int, decimal, money, datetime, url, enum, list)"
                )
                continue
            }
            fields.append(
                FieldDefinition(
                    name: name,
                    type: type,
                    path: path,
                    required: field.required ?? true,
                    style: field.style ?? "medium"
                )
            )
        }
        var condition: (path: FieldPath, value: String)?
        if let when = raw.when {
            let parts = when.components(separatedBy: "==").map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, let path = FieldPath(parts[0]), !parts[1].isEmpty {
                condition = (path, parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"'")))
            } else {
                error(file, "when", "'\(when)' is not a condition such as data.channel == sms")
            }
        }
        var deepLinkPattern: DeepLinkPattern?
        if let pattern = raw.deepLink {
            switch DeepLinkPattern.parse(pattern) {
            case .success(let parsed):
                deepLinkPattern = parsed
                for parameter in parsed.parameters where !declared.contains(parameter) {
                    error(file, "deepLink", "parameter '\(parameter)' is not a declared field")
                }
                for parameter in parsed.parameters {
                    if let field = fields.first(where: { $0.name == parameter }), !field.required {
                        error(file, "deepLink", "parameter '\(parameter)' must be a required field")
                    }
                }
            case .failure(let reason):
                error(file, "deepLink", reason.message)
            }
        }
        for name in raw.push.data ?? [] where !declared.contains(name) {
            error(file, "push.data", "'\(name)' is not a declared field")
        }
        var templates: [String: TextTemplate] = [:]
        for (key, text) in [("push.collapseKey", raw.push.collapseKey), ("push.threadId", raw.push.threadId)] {
            guard let text else { continue }
            guard let template = TextTemplate(text) else {
                error(file, key, "'\(text)' has a malformed placeholder; write {fieldName}")
                continue
            }
            for name in template.parameters where !declared.contains(name) {
                error(file, key, "placeholder '\(name)' is not a declared field")
            }
            templates[key] = template
        }
        if let ttl = raw.push.ttl, !Self.timeToLiveSeconds.contains(ttl) {
            error(file, "push.ttl", "must be from 1 to 2419200 seconds (28 days, the most FCM accepts), not \(ttl)")
        }
        let silent = raw.push.silent ?? false
        // A badge with neither a title nor a body: the push only sets the app icon's count.
        let badgeOnly = !silent && raw.push.title == nil && raw.push.body == nil && raw.push.badge != nil
        if silent {
            // Apple delivers a background push only without an alert, a sound or a badge.
            for (key, present) in raw.push.shownKeys where present {
                error(file, "push.\(key.rawValue)", "a silent push shows nothing: leave this out")
            }
            if raw.digest != nil { error(file, "digest", "a silent push shows nothing: leave this out") }
        } else if badgeOnly {
            for (key, present) in raw.push.shownKeys where present && key != .badge {
                error(
                    file,
                    "push.\(key.rawValue)",
                    "a badge-only push (a badge without a title or a body) shows nothing else: leave this out"
                )
            }
            if raw.digest != nil {
                error(file, "digest", "a badge-only push has no text to sum up a digest in: leave this out")
            }
        } else {
            let unless = "unless the push is silent or only sets the badge (push.badge without a title or a body)"
            if raw.push.title == nil { error(file, "push.title", "is required, \(unless)") }
            if raw.push.body == nil { error(file, "push.body", "is required, \(unless)") }
        }
        // A silent push is a background refresh, a badge-only push a count the user checks when
        // ready: FCM and APNs deliver them with normal priority unless the kind asks for more
        // (Android may hold back high-priority data messages that show nothing).
        let priority = raw.push.priority ?? (silent || badgeOnly ? "normal" : "high")
        if !["high", "normal"].contains(priority) { error(file, "push.priority", "must be high or normal") }
        var badge: BadgeSource?
        if let raw = raw.push.badge { badge = badgeSource(raw, fields: fields, declared: declared, file: file) }
        if badgeOnly, case .field(let name, let index)? = badge, !fields[index].required {
            // Without the count there would be nothing to send: a push that changes nothing.
            error(
                file,
                "push.badge",
                "a badge-only push needs its count in every event: make field '\(name)' required"
            )
        }
        var image: (name: String, index: Int)?
        if let name = raw.push.image {
            if let index = fields.firstIndex(where: { $0.name == name }) {
                if fields[index].type == .url {
                    image = (name, index)
                } else {
                    error(file, "push.image", "field '\(name)' is \(fields[index].type), not url")
                }
            } else if !declared.contains(name) {
                error(file, "push.image", "'\(name)' is not a declared field")
            }
        }
        if let level = raw.push.interruptionLevel, !["passive", "active", "time-sensitive", "critical"].contains(level)
        {
            error(file, "push.interruptionLevel", "must be passive, active, time-sensitive or critical")
        }
        guard diagnostics[errorsBefore...].allSatisfy({ $0.severity != .error }), let recipients else { return nil }
        return NotificationKind(
            NotificationKind.Storage(
                name: raw.kind,
                file: file,
                eventTypes: raw.events,
                condition: condition,
                category: raw.category,
                app: raw.app,
                recipients: recipients,
                fields: fields,
                deepLink: raw.deepLink,
                deepLinkPattern: deepLinkPattern,
                collapseKeyTemplate: templates["push.collapseKey"],
                threadIDTemplate: templates["push.threadId"],
                presentation: Presentation(
                    title: raw.push.title ?? "",
                    subtitle: raw.push.subtitle,
                    body: raw.push.body ?? "",
                    threadID: raw.push.threadId,
                    iosCategory: raw.push.iosCategory,
                    sound: raw.push.sound,
                    interruptionLevel: raw.push.interruptionLevel,
                    androidChannel: raw.push.androidChannel,
                    collapseKey: raw.push.collapseKey,
                    timeToLive: raw.push.ttl,
                    priority: priority,
                    dataFields: raw.push.data ?? [],
                    badge: badge,
                    image: image,
                    silent: silent,
                    badgeOnly: badgeOnly
                ),
                digestSummary: raw.digest?.summary
            )
        )
    }

    /// `push.badge` checked: a count from 0 to ``BadgeSource/maximumCount``, or a declared field
    /// of type `int`.
    mutating func badgeSource(
        _ raw: RawBadge,
        fields: [FieldDefinition],
        declared: Set<String>,
        file: String
    )
        -> BadgeSource?
    {
        switch raw {
        case .count(let count):
            guard (0...BadgeSource.maximumCount).contains(count) else {
                error(
                    file,
                    "push.badge",
                    "must be a count from 0 to \(BadgeSource.maximumCount), or an int field, not \(count)"
                )
                return nil
            }
            return .constant(count)
        case .field(let name):
            guard let index = fields.firstIndex(where: { $0.name == name }) else {
                // A field declared with a broken definition has its own error already.
                if !declared.contains(name) {
                    error(file, "push.badge", "'\(name)' is not a declared field (or a count such as 1)")
                }
                return nil
            }
            guard fields[index].type == .int else {
                error(file, "push.badge", "field '\(name)' is \(fields[index].type), not int: a badge is a count")
                return nil
            }
            return .field(name: name, index: index)
        }
    }

    // MARK: Type check of messages against kinds

    /// The arguments a digest summary may use besides the kind's fields.
    static let digestArguments: [String: FieldType] = ["count": .int, "others": .int, "sender": .string]

    mutating func checkMessages(kinds: [NotificationKind], bundles: [String: MessageBundle], settings: CatalogSettings)
    {
        for kind in kinds where kind.presentation.showsText {
            var keys: [(key: String, extra: [String: FieldType])] = [
                (kind.presentation.title, [:]), (kind.presentation.body, [:]),
            ]
            if let subtitle = kind.presentation.subtitle { keys.append((subtitle, [:])) }
            if let digest = kind.digestSummary { keys.append((digest, Self.digestArguments)) }
            for (key, extra) in keys {
                if bundles[settings.defaultLocale]?.patterns[key] == nil, bundles[settings.defaultLocale] != nil {
                    error(
                        kind.file,
                        "push",
                        "message '\(key)' is not in the default bundle messages/\(settings.defaultLocale).json"
                    )
                }
                for bundle in bundles.values.sorted(by: { $0.locale < $1.locale }) {
                    guard let message = bundle.messages[key] else { continue }
                    check(message, key: key, bundle: bundle, kind: kind, extra: extra)
                }
            }
        }
    }

    mutating func check(
        _ message: ICUMessage,
        key: String,
        bundle: MessageBundle,
        kind: NotificationKind,
        extra: [String: FieldType]
    ) {
        for use in message.arguments {
            let type: FieldType
            let required: Bool
            if let field = kind.field(named: use.name) {
                type = field.type
                required = field.required
            } else if let builtIn = extra[use.name] {
                type = builtIn
                required = true
            } else {
                error(bundle.file, key, "uses '\(use.name)', which kind \(kind.name) does not declare (\(kind.file))")
                continue
            }
            switch use.kind {
            case .plural, .selectOrdinal, .number:
                if !type.isNumeric {
                    error(
                        bundle.file,
                        key,
                        "'\(use.name)' is \(type) and cannot be used as a number (plural, selectordinal, number)"
                    )
                }
            case .date, .time:
                error(
                    bundle.file,
                    key,
                    "'\(use.name)': write {\(use.name)}; Herald formats \(type) fields itself, in the recipient's locale and time zone"
                )
            case .select:
                if case .enumeration(let values) = type {
                    for keyword in use.selectKeywords
                    where keyword != "other" && keyword != "absent" && !values.contains(keyword) {
                        error(
                            bundle.file,
                            key,
                            "'\(use.name)' has no value '\(keyword)' (\(values.joined(separator: ", ")))"
                        )
                    }
                }
                if use.selectKeywords.contains("absent") && required {
                    warning(bundle.file, key, "'\(use.name)' is required, so its 'absent' case never applies")
                }
            case .simple, .other:
                break
            }
            let isSelectOnItself = use.kind == .select
            if !required && !isSelectOnItself && !use.isGuarded {
                error(
                    bundle.file,
                    key,
                    "optional field '\(use.name)' may be missing: show it only inside {\(use.name), select, absent {…} other {…}}"
                )
            }
        }
    }

    mutating func checkEventTypes(_ kinds: [NotificationKind]) {
        var claims: [String: [NotificationKind]] = [:]
        for kind in kinds {
            for type in kind.eventTypes { claims[type, default: []].append(kind) }
        }
        for (type, claimants) in claims.sorted(by: { $0.key < $1.key }) where claimants.count > 1 {
            let unconditional = claimants.filter { $0.condition == nil }
            if unconditional.count > 1 || claimants.allSatisfy({ $0.condition == nil }) {
                let files = claimants.map(\.file).joined(separator: ", ")
                for kind in unconditional {
                    error(
                        kind.file,
                        "events",
                        "event type '\(type)' is claimed by \(files) with no 'when' rule to choose"
                    )
                }
            }
        }
    }
}
