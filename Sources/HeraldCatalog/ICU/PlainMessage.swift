/// A message whose arguments are only inserted as text (`{sender}`) or chosen on by `select`
/// (`{reason, select, expired_card {…} other {…}}`), formatted by concatenation.
///
/// For string values ICU's output for such a message is literal text with the values in between,
/// and which text depends only on which case each `select` takes. So ICU formats it once per
/// combination of cases, at catalog load, with a marker in place of each inserted value; the
/// text between the markers is kept. A render then costs a few appends instead of a round trip
/// through ICU (UTF-16 conversions, `Formattable`s, a lock per message). ICU decides every
/// detail (apostrophe quoting, nested selects) because ICU made the pieces.
///
/// Plurals, numbers and dates depend on the value and the locale's rules: a message with any of
/// them, or a call with a value that is not a string, is formatted by ICU — unless those values are
/// `fixed` when the message is compiled: then ICU formats them into the pieces, and the compiled
/// message stands for the message with exactly those values (see ``ICUMessage``, which keeps one
/// for each count a message is formatted with).
struct PlainMessage: Sendable {
    enum Piece: Sendable, Equatable {
        case text(String)
        /// The value of the argument ``PlainMessage/names``[index].
        case argument(Int)
    }

    /// An argument chosen on by `select`.
    struct Select: Sendable {
        /// Its index in ``PlainMessage/names``.
        var argument: Int
        /// Its cases' keywords other than `other`, which is case number `keywords.count`.
        var keywords: [String]
        /// What its case number is multiplied by in a variant's index.
        var stride: Int
    }

    /// The distinct argument names, in order of first use.
    let names: [String]
    let selects: [Select]
    /// The pieces for each combination of cases, indexed by the sum of case number × stride.
    let variants: [[Piece]]

    /// More combinations of cases than this are left to ICU: each is formatted at load and kept.
    static let variantLimit = 64

    /// Compiles a message; `nil` if it uses anything but inserted and selected arguments, or if
    /// ICU's output does not come apart as expected (checked with a second set of values).
    ///
    /// - Parameters:
    ///   - pattern: the message's pattern.
    ///   - arguments: its argument uses.
    ///   - fixed: values formatted into the pieces by ICU (any kind of use); every other argument
    ///     must be inserted or selected on.
    ///   - format: formats it in ICU; `nil` if ICU fails.
    init?(
        pattern: String,
        arguments: [ICUMessage.ArgumentUse],
        fixed: [(name: String, value: ICUValue)] = [],
        format: ([(name: String, value: ICUValue)]) -> String?
    ) {
        // The markers must not occur in the message itself.
        guard !pattern.unicodeScalars.contains(where: { $0 == Self.open || $0 == Self.close }) else { return nil }
        var names: [String] = []
        var keywords: [[String]] = []
        for use in arguments where !fixed.contains(where: { $0.name == use.name }) {
            let index: Int
            if let known = names.firstIndex(of: use.name) {
                index = known
            } else {
                index = names.count
                names.append(use.name)
                keywords.append([])
            }
            switch use.kind {
            case .simple: break
            case .select:
                for keyword in use.selectKeywords where keyword != "other" && !keywords[index].contains(keyword) {
                    keywords[index].append(keyword)
                }
            default: return nil
            }
        }
        var selects: [Select] = []
        var count = 1
        for (index, cases) in keywords.enumerated() where !cases.isEmpty {
            selects.append(Select(argument: index, keywords: cases, stride: count))
            count *= cases.count + 1
            guard count <= Self.variantLimit else { return nil }
        }
        self.names = names
        self.selects = selects
        var variants: [[Piece]] = []
        variants.reserveCapacity(count)
        for variant in 0..<count {
            let chosen = Self.chosen(variant, selects: selects, argumentCount: names.count)
            // A select argument in one of its keyword cases is that keyword; any other value is a
            // marker, which no keyword equals, so its select takes `other`.
            let marked = names.indices.map { index in
                (name: names[index], value: ICUValue.string(chosen[index] ?? Self.marker(index)))
            }
            guard let text = format(marked + fixed), let pieces = Self.pieces(of: text, argumentCount: names.count)
            else {
                return nil
            }
            variants.append(pieces)
        }
        self.variants = variants
        // Every variant formats a second set of values as ICU does, or ICU is left to do it.
        for variant in 0..<count {
            let chosen = Self.chosen(variant, selects: selects, argumentCount: names.count)
            let probe = names.indices.map { index in
                (name: names[index], value: ICUValue.string(chosen[index] ?? "«\(names[index]) \(index)»"))
            }
            guard let expected = format(probe + fixed), self.format(probe) == expected else { return nil }
        }
    }

    /// Formats the message with `values`; `nil` if an argument is missing or not a string (ICU
    /// formats numbers, and whatever it does with a missing argument). Fixed arguments are not
    /// looked at: the caller chose this compiled message for their values.
    func format(_ values: [(name: String, value: ICUValue)]) -> String? {
        withUnsafeTemporaryAllocation(of: Int.self, capacity: names.count) { slots -> String? in
            for (index, name) in names.enumerated() {
                // ICU takes the first value of a name given twice.
                guard let slot = values.firstIndex(where: { $0.name == name }),
                    case .string = values[slot].value
                else { return nil }
                slots[index] = slot
            }
            var variant = 0
            for select in selects {
                guard case .string(let value) = values[slots[select.argument]].value else { return nil }
                // Keywords match exactly, code unit for code unit, as in ICU (not by canonical
                // equivalence, as String's == would).
                let chosen = select.keywords.firstIndex { $0.utf8.elementsEqual(value.utf8) } ?? select.keywords.count
                variant += chosen * select.stride
            }
            let pieces = variants[variant]
            var size = 0
            for piece in pieces {
                switch piece {
                case .text(let text): size += text.utf8.count
                case .argument(let index):
                    if case .string(let value) = values[slots[index]].value { size += value.utf8.count }
                }
            }
            return String(byteCount: size) { append in
                for piece in pieces {
                    switch piece {
                    case .text(let text): append(text)
                    case .argument(let index): if case .string(let value) = values[slots[index]].value { append(value) }
                    }
                }
            }
        }
    }

    /// The keyword each select argument takes in `variant` (nil for `other`, and for arguments that
    /// are only inserted), by argument index.
    private static func chosen(_ variant: Int, selects: [Select], argumentCount: Int) -> [String?] {
        var chosen = [String?](repeating: nil, count: argumentCount)
        for select in selects {
            let number = variant / select.stride % (select.keywords.count + 1)
            if number < select.keywords.count { chosen[select.argument] = select.keywords[number] }
        }
        return chosen
    }

    // Unicode noncharacters: meant for a program's internal use, never in interchanged text.
    private static let open = Unicode.Scalar(0xFDD0)!
    private static let close = Unicode.Scalar(0xFDD1)!

    /// The marker standing for argument `index` while the pieces are made.
    private static func marker(_ index: Int) -> String {
        String(Character(open)) + String(index) + String(Character(close))
    }

    /// `text` cut at the markers; `nil` if a marker is malformed or names no argument.
    private static func pieces(of text: String, argumentCount: Int) -> [Piece]? {
        var pieces: [Piece] = []
        var literal = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == open else {
                literal.append(scalar)
                continue
            }
            var digits = ""
            var closed = false
            while let next = scalars.next() {
                if next == close {
                    closed = true
                    break
                }
                digits.unicodeScalars.append(next)
            }
            guard closed, let index = Int(digits), (0..<argumentCount).contains(index) else { return nil }
            if !literal.isEmpty { pieces.append(.text(String(literal))) }
            literal = String.UnicodeScalarView()
            pieces.append(.argument(index))
        }
        if !literal.isEmpty { pieces.append(.text(String(literal))) }
        return pieces
    }
}
