import HeraldEvents
import HeraldWorker

/// What a replay produced, summarized: as Markdown, JSON or HTML. Holds no wall-clock time, so the
/// same inputs give the same report byte for byte.
public struct ReplayReport: Sendable {
    public var sources: [String]
    public var records: Int
    public var firstEventTime: Timestamp?
    public var lastEventTime: Timestamp?
    /// The worker's counters over the replay: events, decisions, outbound messages by kind, locale,
    /// category and provider, payload sizes, dead letters.
    public var counters: WorkerStatistics.Counters
    /// Who was throttled, and where dead letters came from.
    var tally: ReplayTally
    /// Renders whose requested locale the catalog lacks.
    public var fallbacks: [Fallback: Int]
    /// When the first due work left after the last event comes due (replay without draining).
    public var pendingDueAt: Timestamp?

    public struct Fallback: Sendable, Hashable, Comparable {
        public var kind: String
        /// Empty when neither the device nor the profile names a locale.
        public var requested: String
        public var used: String

        public static func < (lhs: Fallback, rhs: Fallback) -> Bool {
            (lhs.kind, lhs.requested, lhs.used) < (rhs.kind, rhs.requested, rhs.used)
        }
    }

    public var eventsByType: [String: Int] { counters.eventsByType }
    public var directoryChanges: Int { counters.directoryChanges }
    public var ignoredEvents: Int { counters.ignoredEvents }
    public var skippedDevices: Int { counters.skippedDevices }
    public var decisionsByReason: [String: Int] { counters.decisionsByReason }
    public var outboundByKind: [String: Int] { counters.outboundByKind }
    public var outboundByLocale: [String: Int] { counters.outboundByLocale }
    public var outboundByCategory: [String: Int] { counters.outboundByCategory }
    public var outboundByProvider: [String: Int] { counters.outboundByProvider }
    public var deadLettersByCode: [String: Int] { counters.deadLettersByCode }
    public var outbound: Int { counters.outboundByProvider.values.reduce(0, +) }
    public var events: Int { eventsByType.values.reduce(0, +) }

    /// The recipients most often throttled (hashed ids), most first.
    public func mostThrottled(_ count: Int = 10) -> [(user: String, throttled: Int)] {
        tally.throttledByRecipient.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(count)
            .map { ($0.key, $0.value) }
    }

    /// Request body size percentiles per provider: (p50, p90, p99, max) in bytes.
    public var payloadSizes: [(provider: String, count: Int, p50: Int, p90: Int, p99: Int, max: Int)] {
        counters.payloadSizes.keys.sorted().map { provider in
            let sizes = counters.payloadSizes[provider]!
            return (
                provider, sizes.total, sizes.percentile(0.5), sizes.percentile(0.9), sizes.percentile(0.99),
                sizes.percentile(1)
            )
        }
    }

    // MARK: Rendering

    /// A section of counts: title and rows.
    private var tables: [(title: String, rows: [(String, Int)])] {
        func sorted(_ counts: [String: Int]) -> [(String, Int)] {
            counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { ($0.key, $0.value) }
        }
        return [
            ("Events by type", sorted(eventsByType)),
            ("Decisions by reason", sorted(decisionsByReason)),
            ("Notifications by kind", sorted(outboundByKind)),
            ("Notifications by locale", sorted(outboundByLocale)),
            ("Notifications by category", sorted(outboundByCategory)),
            ("Notifications by provider", sorted(outboundByProvider)),
            ("Dead letters by code", sorted(deadLettersByCode)),
        ]
    }

    private var span: String {
        guard let firstEventTime, let lastEventTime else { return "no event times" }
        return "\(firstEventTime) – \(lastEventTime)"
    }

    public func markdown() -> String {
        var lines = ["# Replay report", ""]
        lines.append("- sources: \(sources.joined(separator: ", "))")
        lines.append("- records: \(records); events: \(events); directory changes: \(directoryChanges)")
        lines.append("- event time: \(span)")
        lines.append("- notifications (provider calls): \(outbound)")
        if ignoredEvents > 0 { lines.append("- events of unknown types ignored: \(ignoredEvents)") }
        if skippedDevices > 0 { lines.append("- devices skipped (token no provider accepts): \(skippedDevices)") }
        if let pendingDueAt { lines.append("- due work still pending after the last event, first due \(pendingDueAt)") }
        for table in tables {
            lines += ["", "## \(table.title)", ""]
            if table.rows.isEmpty {
                lines.append("none")
                continue
            }
            lines += ["| | count |", "|---|---:|"]
            lines += table.rows.map { "| \($0.0) | \($0.1) |" }
        }
        lines += ["", "## Payload sizes (request body bytes)", ""]
        lines += ["| provider | calls | p50 | p90 | p99 | max |", "|---|---:|---:|---:|---:|---:|"]
        lines += payloadSizes.map { "| \($0.provider) | \($0.count) | \($0.p50) | \($0.p90) | \($0.p99) | \($0.max) |" }
        lines += ["", "## Most-throttled users (hashed ids)", ""]
        let throttled = mostThrottled()
        if throttled.isEmpty { lines.append("none") }
        lines += throttled.map { "- \($0.user): \($0.throttled)" }
        lines += ["", "## Dead letters: where to look (first \(ReplayTally.examplesPerCode) per code)", ""]
        if tally.deadLetterExamples.isEmpty { lines.append("none") }
        for code in tally.deadLetterExamples.keys.sorted() {
            lines.append("- **\(code)**")
            lines += tally.deadLetterExamples[code]!.map { "  - \($0)" }
        }
        lines += ["", "## Missing translations (renders that fell back)", ""]
        if fallbacks.isEmpty { lines.append("none") }
        for (fallback, count) in fallbacks.sorted(by: { $0.key < $1.key }) {
            let requested = fallback.requested.isEmpty ? "(no locale)" : fallback.requested
            lines.append("- \(fallback.kind): \(requested) → \(fallback.used): \(count)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public func json() -> String {
        var writer = JSONStreamWriter(capacity: 4096)
        func counts(_ name: String, _ values: [String: Int]) {
            writer.key(name)
            writer.beginObject()
            for key in values.keys.sorted() { writer.member(key, integer: Int64(values[key]!)) }
            writer.endObject()
        }
        writer.beginObject()
        writer.key("sources")
        writer.beginArray()
        for source in sources {
            writer.element()
            writer.string(source)
        }
        writer.endArray()
        writer.member("records", integer: Int64(records))
        writer.member("events", integer: Int64(events))
        writer.member("directoryChanges", integer: Int64(directoryChanges))
        writer.member("notifications", integer: Int64(outbound))
        writer.member("ignoredEvents", integer: Int64(ignoredEvents))
        writer.member("skippedDevices", integer: Int64(skippedDevices))
        if let firstEventTime { writer.member("firstEventTime", firstEventTime.description) }
        if let lastEventTime { writer.member("lastEventTime", lastEventTime.description) }
        if let pendingDueAt { writer.member("pendingDueAt", pendingDueAt.description) }
        counts("eventsByType", eventsByType)
        counts("decisionsByReason", decisionsByReason)
        counts("notificationsByKind", outboundByKind)
        counts("notificationsByLocale", outboundByLocale)
        counts("notificationsByCategory", outboundByCategory)
        counts("notificationsByProvider", outboundByProvider)
        counts("deadLettersByCode", deadLettersByCode)
        writer.key("payloadSizes")
        writer.beginObject()
        for size in payloadSizes {
            writer.key(size.provider)
            writer.beginObject()
            writer.member("count", integer: Int64(size.count))
            writer.member("p50", integer: Int64(size.p50))
            writer.member("p90", integer: Int64(size.p90))
            writer.member("p99", integer: Int64(size.p99))
            writer.member("max", integer: Int64(size.max))
            writer.endObject()
        }
        writer.endObject()
        writer.key("mostThrottled")
        writer.beginArray()
        for entry in mostThrottled() {
            writer.element()
            writer.beginObject()
            writer.member("user", entry.user)
            writer.member("throttled", integer: Int64(entry.throttled))
            writer.endObject()
        }
        writer.endArray()
        writer.key("deadLetterExamples")
        writer.beginObject()
        for code in tally.deadLetterExamples.keys.sorted() {
            writer.key(code)
            writer.beginArray()
            for example in tally.deadLetterExamples[code]! {
                writer.element()
                writer.string(example)
            }
            writer.endArray()
        }
        writer.endObject()
        writer.key("missingTranslations")
        writer.beginArray()
        for (fallback, count) in fallbacks.sorted(by: { $0.key < $1.key }) {
            writer.element()
            writer.beginObject()
            writer.member("kind", fallback.kind)
            writer.member("requested", fallback.requested)
            writer.member("used", fallback.used)
            writer.member("count", integer: Int64(count))
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self) + "\n"
    }

    /// A self-contained page: the Markdown report's content as HTML tables.
    public func html() -> String {
        func escape(_ text: String) -> String {
            var escaped = ""
            for character in text {
                switch character {
                case "&": escaped += "&amp;"
                case "<": escaped += "&lt;"
                case ">": escaped += "&gt;"
                case "\"": escaped += "&quot;"
                default: escaped.append(character)
                }
            }
            return escaped
        }
        var html = [
            "<!doctype html>", "<html><head><meta charset=\"utf-8\"><title>Herald replay report</title>",
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
                + "td,th{border:1px solid #ccc;padding:.2em .6em}td.n{text-align:right}</style></head><body>",
            "<h1>Replay report</h1>", "<ul>",
            "<li>sources: \(escape(sources.joined(separator: ", ")))</li>",
            "<li>records: \(records); events: \(events); directory changes: \(directoryChanges)</li>",
            "<li>event time: \(escape(span))</li>", "<li>notifications (provider calls): \(outbound)</li>", "</ul>",
        ]
        for table in tables {
            html.append("<h2>\(escape(table.title))</h2><table>")
            html += table.rows.map { "<tr><td>\(escape($0.0))</td><td class=\"n\">\($0.1)</td></tr>" }
            html.append("</table>")
        }
        html.append("<h2>Payload sizes (request body bytes)</h2><table>")
        html.append("<tr><th>provider</th><th>calls</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>")
        html += payloadSizes.map {
            "<tr><td>\($0.provider)</td><td class=\"n\">\($0.count)</td><td class=\"n\">\($0.p50)</td>"
                + "<td class=\"n\">\($0.p90)</td><td class=\"n\">\($0.p99)</td><td class=\"n\">\($0.max)</td></tr>"
        }
        html.append("</table><h2>Most-throttled users (hashed ids)</h2><table>")
        html += mostThrottled().map { "<tr><td>\($0.user)</td><td class=\"n\">\($0.throttled)</td></tr>" }
        html.append("</table><h2>Dead letters: where to look</h2><ul>")
        for code in tally.deadLetterExamples.keys.sorted() {
            html.append("<li><b>\(escape(code))</b><ul>")
            html += tally.deadLetterExamples[code]!.map { "<li>\(escape($0))</li>" }
            html.append("</ul></li>")
        }
        html.append("</ul><h2>Missing translations</h2><table>")
        for (fallback, count) in fallbacks.sorted(by: { $0.key < $1.key }) {
            html.append(
                "<tr><td>\(escape(fallback.kind))</td><td>\(escape(fallback.requested))</td>"
                    + "<td>\(escape(fallback.used))</td><td class=\"n\">\(count)</td></tr>"
            )
        }
        html.append("</table></body></html>")
        return html.joined(separator: "\n") + "\n"
    }
}
