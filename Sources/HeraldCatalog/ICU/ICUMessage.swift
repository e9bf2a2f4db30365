import CHeraldICU
import Synchronization

/// A compiled ICU MessageFormat message for one locale. Immutable; formatting is thread-safe.
final class ICUMessage: @unchecked Sendable {
    // @unchecked: the ICU object is only read after construction, and the C layer serializes format
    // calls (ICU's MessageFormat caches sub-formatters lazily).
    private let handle: OpaquePointer

    /// Every use of an argument in the message, in order.
    let arguments: [ArgumentUse]
    /// The distinct argument names the message uses.
    let argumentNames: Set<String>
    /// The message's text, for compiling it with counts.
    private let pattern: String
    /// The text of a message without arguments, formatted once.
    private let constantText: String?
    /// The message as literal text around its arguments, if they are only inserted or selected
    /// on: most messages, formatted without crossing into ICU.
    private let plain: PlainMessage?
    /// For a message whose other arguments are only inserted or selected on, the arguments it
    /// counts with (`plural`, `selectordinal`), in order; empty otherwise.
    private let counted: [String]
    /// The message compiled for each tuple of whole-number counts (in the order of `counted`) it
    /// was formatted with, up to ``countedVariantLimit`` of them; `nil` for counts whose message
    /// did not come apart (ICU formats those). Counts are mostly small numbers that recur (items
    /// in an order, unread messages, a digest's size), and one plural message formatted by ICU cost
    /// about 22,000 instructions, a compiled one a few appends.
    private let countedVariants = Mutex<[[Int64]: PlainMessage?]>([:])
    static let countedVariantLimit = 64

    /// One use of a named argument.
    struct ArgumentUse: Sendable, Equatable {
        enum Kind: Sendable, Equatable {
            case simple, number, date, time, plural, select, selectOrdinal, other
        }
        var name: String
        var kind: Kind
        /// For `select`: the case keywords, including `other`.
        var selectKeywords: [String]
        /// Inside a case other than `absent` of a `select` on the same argument.
        var isGuarded: Bool = false
    }

    /// Compiles `pattern` for `locale` (a BCP 47 tag).
    ///
    /// - Throws: ``ICUError`` naming the problem and its byte offset in `pattern`.
    init(locale: String, pattern: String) throws(ICUError) {
        var error = herald_icu_error()
        var pattern = pattern
        let handle = pattern.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                herald_message_open(locale, $0.baseAddress, Int32($0.count), &error)
            }
        }
        guard let handle else { throw ICUError(error) }
        self.handle = handle
        self.pattern = pattern
        var uses: [ArgumentUse] = []
        let count = herald_message_argument_count(handle)
        for index in 0..<count {
            var kind = HERALD_ARGUMENT_SIMPLE
            var name = [CChar](repeating: 0, count: 256)
            var keywords = [CChar](repeating: 0, count: 1024)
            var guarded: Int32 = 0
            herald_message_argument(handle, index, &name, 256, &kind, &keywords, 1024, &guarded)
            let keywordText = String(decoding: keywords.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            uses.append(
                ArgumentUse(
                    name: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                    kind: Self.kind(kind),
                    selectKeywords: keywordText.isEmpty ? [] : keywordText.split(separator: ",").map(String.init),
                    isGuarded: guarded != 0
                )
            )
        }
        arguments = uses
        argumentNames = Set(uses.map(\.name))
        counted = Self.countedArguments(uses)
        if uses.isEmpty {
            var error = herald_icu_error()
            constantText = withGrowingBuffer { output, capacity in
                herald_message_format(handle, nil, 0, output, capacity, &error)
            }
            plain = nil
        } else {
            constantText = nil
            let names = argumentNames
            plain = PlainMessage(pattern: pattern, arguments: uses) { values in
                try? Self.formatWithICU(handle, names: names, uses: uses.count, values)
            }
        }
    }

    deinit {
        herald_message_close(handle)
    }

    private static func kind(_ kind: herald_argument_kind) -> ArgumentUse.Kind {
        switch kind {
        case HERALD_ARGUMENT_SIMPLE: .simple
        case HERALD_ARGUMENT_NUMBER: .number
        case HERALD_ARGUMENT_DATE: .date
        case HERALD_ARGUMENT_TIME: .time
        case HERALD_ARGUMENT_PLURAL: .plural
        case HERALD_ARGUMENT_SELECT: .select
        case HERALD_ARGUMENT_SELECTORDINAL: .selectOrdinal
        default: .other
        }
    }

    /// Formats the message with named values.
    ///
    /// - Throws: ``ICUError`` if ICU cannot format it (for example a decimal that is not a number).
    func format(_ values: [(name: String, value: ICUValue)]) throws(ICUError) -> String {
        if let constantText { return constantText }
        if let text = plain?.format(values) { return text }
        if !counted.isEmpty, let text = formatCounted(values) { return text }
        return try Self.formatWithICU(handle, names: argumentNames, uses: arguments.count, values)
    }

    /// The names a message counts with, if every other argument is only inserted or selected on
    /// and a counted one is not also selected on; otherwise none (ICU formats the message).
    private static func countedArguments(_ uses: [ArgumentUse]) -> [String] {
        var counted: [String] = []
        for use in uses where use.kind == .plural || use.kind == .selectOrdinal {
            if !counted.contains(use.name) { counted.append(use.name) }
        }
        for use in uses {
            switch use.kind {
            case .plural, .selectOrdinal: continue
            case .simple: continue
            case .select where !counted.contains(use.name): continue
            default: return []
            }
        }
        return counted
    }

    /// ``format(_:)`` through the message compiled for the values' counts, compiling it (ICU
    /// formats the counts into its pieces) the first time they are seen; `nil` if a count is not
    /// a whole number, the counts are new and there is no room for them, or the message does not
    /// come apart: ICU formats it.
    private func formatCounted(_ values: [(name: String, value: ICUValue)]) -> String? {
        var counts: [Int64] = []
        counts.reserveCapacity(counted.count)
        for name in counted {
            // ICU takes the first value of a name given twice.
            guard let value = values.first(where: { $0.name == name })?.value, case .integer(let count) = value else {
                return nil
            }
            counts.append(count)
        }
        let (known, room) = countedVariants.withLock { ($0[counts], $0.count < Self.countedVariantLimit) }
        if let known { return known?.format(values) }
        // Compiling costs a few ICU formats: only for counts that are kept.
        guard room else { return nil }
        let fixed = zip(counted, counts).map { (name: $0, value: ICUValue.integer($1)) }
        let (handle, names, uses) = (handle, argumentNames, arguments.count)
        let compiled = PlainMessage(pattern: pattern, arguments: arguments, fixed: fixed) { values in
            try? Self.formatWithICU(handle, names: names, uses: uses, values)
        }
        countedVariants.withLock { variants in
            if variants.count < Self.countedVariantLimit { variants[counts] = compiled }
        }
        return compiled?.format(values)
    }

    /// Whether the message is formatted without ICU for string values.
    var isPlain: Bool { plain != nil }

    /// How many tuples of counts the message has been compiled for (see `countedVariants`).
    var compiledCounts: Int { countedVariants.withLock { $0.values.count { $0 != nil } } }

    /// Formats the message in ICU, even if it is plain: what the plain form must match.
    func formatInICU(_ values: [(name: String, value: ICUValue)]) throws(ICUError) -> String {
        if let constantText { return constantText }
        return try Self.formatWithICU(handle, names: argumentNames, uses: arguments.count, values)
    }

    /// Formats the message `handle` in ICU. `names` are the argument names it uses, `uses` how many
    /// times it uses one.
    private static func formatWithICU(
        _ handle: OpaquePointer,
        names: Set<String>,
        uses: Int,
        _ values: [(name: String, value: ICUValue)]
    ) throws(ICUError) -> String {
        // Only what the message uses crosses into ICU (each value is converted to UTF-16 there);
        // skipped in place rather than filtered into an array of their own.
        let checkNames = values.count > uses
        func isUsed(_ name: String) -> Bool { !checkNames || names.contains(name) }
        // All names and strings go into one temporary buffer, so the C arguments point into a
        // single allocation that lives for the whole call.
        var size = 0
        for (name, value) in values where isUsed(name) {
            size += name.utf8.count + 1
            switch value {
            case .string(let text), .decimal(let text): size += text.utf8.count + 1
            case .double, .integer: break
            }
        }
        var error = herald_icu_error()
        let text: String? = withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(size, 1)) { storage in
            withUnsafeTemporaryAllocation(of: herald_argument.self, capacity: max(values.count, 1)) { arguments in
                var cursor = 0
                func append(_ text: String) -> UnsafePointer<CChar> {
                    let start = storage.baseAddress! + cursor
                    var text = text
                    let count = text.withUTF8 { bytes in
                        if let source = bytes.baseAddress, bytes.count > 0 {
                            UnsafeMutableRawPointer(start).copyMemory(from: source, byteCount: bytes.count)
                        }
                        return bytes.count
                    }
                    cursor += count
                    storage[cursor] = 0
                    cursor += 1
                    return UnsafePointer(start)
                }
                var used = 0
                for (name, value) in values where isUsed(name) {
                    var argument = herald_argument()
                    argument.name = append(name)
                    switch value {
                    case .string(let text):
                        argument.kind = HERALD_VALUE_STRING
                        argument.string = append(text)
                        argument.string_length = Int32(text.utf8.count)
                    case .decimal(let text):
                        argument.kind = HERALD_VALUE_DECIMAL
                        argument.string = append(text)
                        argument.string_length = Int32(text.utf8.count)
                    case .double(let number):
                        argument.kind = HERALD_VALUE_DOUBLE
                        argument.number = number
                    case .integer(let number):
                        argument.kind = HERALD_VALUE_INT64
                        argument.integer = number
                    }
                    arguments[used] = argument
                    used += 1
                }
                return withGrowingBuffer { output, capacity in
                    herald_message_format(handle, arguments.baseAddress, Int32(used), output, capacity, &error)
                }
            }
        }
        guard let text else { throw ICUError(error) }
        return text
    }
}

/// A value passed to an ICU message.
enum ICUValue: Sendable, Equatable {
    case string(String)
    case double(Double)
    case integer(Int64)
    /// An exact decimal number, e.g. "1234.50".
    case decimal(String)
}
