import Yams

/// The keys a catalog file may hold, to tell a misspelt key from an absent one: decoding a YAML
/// file ignores keys it does not know, so `interuptionLevel: critical` in a security alert's kind
/// passed `catalog check` and the alert went out as an ordinary one.
indirect enum KeySchema: Sendable {
    /// A mapping of these keys, each with its own schema.
    case keys([String: KeySchema])
    /// A mapping of names the file chooses (fields, apps, categories), each value with this schema.
    case entries(KeySchema)
    /// A list whose elements have this schema.
    case list(KeySchema)
    /// A value whose keys, if any, are not checked here (a scalar, a list of scalars, a mapping of
    /// locales to patterns).
    case value

    /// A mapping of `keys`, each a value.
    static func values(_ keys: [String]) -> KeySchema {
        .keys(Dictionary(uniqueKeysWithValues: keys.map { ($0, .value) }))
    }

    /// A mapping of `keys`, each a value unless `nested` gives its schema.
    static func keys(_ keys: [String], nested: [String: KeySchema]) -> KeySchema {
        .keys(Dictionary(uniqueKeysWithValues: keys.map { ($0, nested[$0] ?? .value) }))
    }

    /// An unknown key in `yaml`: its path (`push.interuptionLevel`, `policies.messages.throttle[0].limt`)
    /// and a message naming the known key it most likely meant, or the keys known there. Nothing for
    /// text that is not YAML (decoding reports that).
    func unknownKeys(in yaml: String) -> [(key: String, message: String)] {
        guard let node = try? Yams.compose(yaml: yaml) else { return [] }
        var found: [(key: String, message: String)] = []
        check(node, path: "", into: &found)
        return found
    }

    private func check(_ node: Node, path: String, into found: inout [(key: String, message: String)]) {
        switch (self, node) {
        case (.keys(let known), .mapping(let mapping)):
            for (key, value) in mapping {
                guard let name = key.string else { continue }
                // A YAML merge key (`<<: *defaults`): the merged mapping's keys belong here.
                if name == "<<" {
                    if case .sequence(let merged) = value {
                        for element in merged { check(element, path: path, into: &found) }
                    } else {
                        check(value, path: path, into: &found)
                    }
                    continue
                }
                let keyPath = path.isEmpty ? name : "\(path).\(name)"
                guard let schema = known[name] else {
                    found.append((keyPath, Self.unknown(name, known: known.keys.sorted())))
                    continue
                }
                schema.check(value, path: keyPath, into: &found)
            }
        case (.entries(let schema), .mapping(let mapping)):
            for (key, value) in mapping {
                guard let name = key.string else { continue }
                schema.check(value, path: path.isEmpty ? name : "\(path).\(name)", into: &found)
            }
        case (.list(let schema), .sequence(let elements)):
            for (index, element) in elements.enumerated() {
                schema.check(element, path: "\(path)[\(index)]", into: &found)
            }
        default:
            // A value where a mapping was expected (or the reverse) is decoding's to report.
            break
        }
    }

    static func unknown(_ name: String, known: [String]) -> String {
        if let meant = closest(to: name, in: known) { return "unknown key; did you mean '\(meant)'?" }
        return "unknown key; known here: \(known.joined(separator: ", "))"
    }

    /// The known key `name` is most likely a misspelling of: the same but for case, or at most two
    /// edits away (and not shorter than the edits).
    static func closest(to name: String, in known: [String]) -> String? {
        if let same = known.first(where: { $0.lowercased() == name.lowercased() }) { return same }
        let scored = known.map { (key: $0, distance: editDistance(Array(name.utf8), Array($0.utf8))) }
            .filter { $0.distance <= 2 && $0.distance < $0.key.utf8.count }
        return scored.min { ($0.distance, $0.key) < ($1.distance, $1.key) }?.key
    }

    /// Levenshtein distance: insertions, deletions and substitutions.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
