import HeraldEvents
import HeraldWorker

/// `herald replay diff A B`: what a catalog or policy change does to the same traffic. Two replay
/// outputs (`--out` files) are matched by notification id — `hash(event, kind, recipient, token)`,
/// so the same notification has the same id in both — and compared: notifications added, removed,
/// and changed (text, deep link or any other part of the provider request).
///
/// The first file is held in memory (one small entry per notification); the second is streamed.
public struct ReplayDiff: Sendable {
    /// One notification, as the diff compares it.
    struct Entry: Sendable {
        var kind: String
        var locale: String
        var text: DisplayedText
        /// A hash of the whole provider request (headers and body): changes beyond the text show
        /// as changed. Both files are read by one process, so Swift's seeded hashing compares them.
        var requestHash: Int
    }

    /// Notifications alike in kind, locale and text (before and after), counted together.
    public struct Group: Sendable, Hashable, Comparable {
        public var kind: String
        public var locale: String
        public var before: String
        public var after: String

        public static func < (lhs: Group, rhs: Group) -> Bool {
            (lhs.kind, lhs.locale, lhs.before, lhs.after) < (rhs.kind, rhs.locale, rhs.before, rhs.after)
        }
    }

    public var countA = 0
    public var countB = 0
    public var unchanged = 0
    public var added: [Group: Int] = [:]
    public var removed: [Group: Int] = [:]
    public var changed: [Group: Int] = [:]

    /// - Throws: ``ReplayError`` when a file cannot be read or a line is not an outbound message.
    public init(_ pathA: String, _ pathB: String) throws {
        var entries: [String: Entry] = [:]
        try Self.forEachEntry(in: pathA) { id, entry in
            entries[id] = entry
            countA += 1
        }
        try Self.forEachEntry(in: pathB) { id, entry in
            countB += 1
            guard let before = entries.removeValue(forKey: id) else {
                added[
                    Group(kind: entry.kind, locale: entry.locale, before: "", after: Self.text(entry.text)),
                    default: 0
                ] +=
                    1
                return
            }
            if before.requestHash == entry.requestHash {
                unchanged += 1
                return
            }
            var beforeText = Self.text(before.text)
            var afterText = Self.text(entry.text)
            if beforeText == afterText {
                beforeText = "(same text; other payload members changed)"
                afterText = beforeText
            }
            // A notification now rendered in another locale is grouped under both: `de → de-AT`.
            let locale = before.locale == entry.locale ? entry.locale : "\(before.locale) → \(entry.locale)"
            changed[Group(kind: entry.kind, locale: locale, before: beforeText, after: afterText), default: 0] += 1
        }
        for entry in entries.values {
            removed[
                Group(kind: entry.kind, locale: entry.locale, before: Self.text(entry.text), after: ""),
                default: 0
            ] +=
                1
        }
    }

    public var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

    /// Added, removed and changed notifications by kind.
    public var byKind: [(kind: String, added: Int, removed: Int, changed: Int)] {
        var kinds: [String: (Int, Int, Int)] = [:]
        for (group, count) in added { kinds[group.kind, default: (0, 0, 0)].0 += count }
        for (group, count) in removed { kinds[group.kind, default: (0, 0, 0)].1 += count }
        for (group, count) in changed { kinds[group.kind, default: (0, 0, 0)].2 += count }
        return kinds.keys.sorted().map { (kind: $0, added: kinds[$0]!.0, removed: kinds[$0]!.1, changed: kinds[$0]!.2) }
    }

    /// The summary first, then the groups of each section, largest first, at most `limit` each.
    public func markdown(limit: Int = 20) -> String {
        func total(_ groups: [Group: Int]) -> Int { groups.values.reduce(0, +) }
        var lines = [
            "# Replay diff", "",
            "- A: \(countA) notifications; B: \(countB)",
            "- unchanged \(unchanged), added \(total(added)), removed \(total(removed)), changed \(total(changed))",
        ]
        if isEmpty {
            lines += ["", "No differences."]
            return lines.joined(separator: "\n") + "\n"
        }
        lines += ["", "| kind | added | removed | changed |", "|---|---:|---:|---:|"]
        lines += byKind.map { "| \($0.kind) | \($0.added) | \($0.removed) | \($0.changed) |" }
        func section(_ title: String, _ groups: [Group: Int], _ line: (Group) -> [String]) {
            guard !groups.isEmpty else { return }
            lines += ["", "## \(title)", ""]
            let sorted = groups.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
            for (group, count) in sorted.prefix(limit) {
                lines.append("- \(group.kind) [\(group.locale)] × \(count)")
                lines += line(group).map { "  \($0)" }
            }
            if sorted.count > limit { lines.append("- … and \(sorted.count - limit) more groups") }
        }
        section("Changed", changed) { ["before: \($0.before)", "after:  \($0.after)"] }
        section("Added", added) { [$0.after] }
        section("Removed", removed) { [$0.before] }
        return lines.joined(separator: "\n") + "\n"
    }

    static func text(_ text: DisplayedText) -> String {
        var parts: [String] = text.silent ? ["(silent)"] : text.badgeOnly ? ["(badge only)"] : []
        if let title = text.title { parts.append(title) }
        if let body = text.body { parts.append(body) }
        var joined = parts.joined(separator: " — ")
        if let link = text.deepLink { joined += " ↳ \(link)" }
        if let image = text.image { joined += " [image \(image)]" }
        if let badge = text.badge { joined += " [badge \(badge)]" }
        return joined
    }

    private static func forEachEntry(in path: String, _ body: (String, Entry) -> Void) throws {
        let reader = try LineReader(path: path)
        let parser = JSONParser()
        while true {
            let more = try reader.nextLine { bytes -> Bool in
                guard !bytes.isEmpty else { return true }
                guard case .object(let message)? = try? parser.parse(bytes),
                    let id = message["notificationId"]?.stringValue, let request = message["request"],
                    let payload = request["body"]
                else {
                    throw ReplayError.cannotRead(
                        path: "\(path):\(reader.lineNumber)",
                        reason: "not an outbound message (herald replay --out writes them)"
                    )
                }
                let provider = message["provider"]?.stringValue ?? ""
                body(
                    id,
                    Entry(
                        kind: message["kind"]?.stringValue ?? "?",
                        locale: message["locale"]?.stringValue ?? "?",
                        text: DisplayedText(provider: provider, payload: payload),
                        requestHash: request.hashValue
                    )
                )
                return true
            }
            guard more != nil else { break }
        }
    }
}
