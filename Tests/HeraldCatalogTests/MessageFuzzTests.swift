import HeraldEvents
import Testing

@testable import HeraldCatalog

/// Messages made at random from MessageFormat's pieces (quoting, selects, plurals, `#`, nesting),
/// formatted by Herald's own paths (plain text between values, messages compiled per count) and by
/// ICU: the two must agree on every one ICU accepts.
@Suite("ICU messages at random")
struct MessageFuzzTests {
    struct Generator {
        var random: SeededRandom

        mutating func pick<T>(_ choices: [T]) -> T { choices[Int(random.next() % UInt64(choices.count))] }

        mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }

        /// Literal text: letters, spaces, apostrophes alone and doubled, quoted braces and `#`,
        /// quoted runs, and characters outside ASCII.
        mutating func text(inPlural: Bool) -> String {
            var pieces = ["a", "b c", " ", "'", "''", "'{'", "'}'", "'#'", "'{x}'", "'a'", "ø", "😀", "|", ",", "é"]
            if inPlural { pieces += ["#", "#", "'#'"] }
            return (0..<Int(random.next() % 4)).map { _ in pick(pieces) }.joined()
        }

        mutating func message(depth: Int, inPlural: Bool) -> String {
            var result = ""
            for _ in 0..<(1 + Int(random.next() % 3)) {
                result += text(inPlural: inPlural)
                guard depth < 3, chance(70) else { continue }
                switch random.next() % 4 {
                case 0: result += "{\(pick(["s", "t"]))}"
                case 1:
                    let argument = pick(["s", "t"])
                    let keywords = ["warm", "cold", "absent", "x_y", "K"].filter { _ in chance(50) }
                    result += "{\(argument), select,"
                    for keyword in keywords + ["other"] {
                        result += " \(keyword) {\(message(depth: depth + 1, inPlural: inPlural))}"
                    }
                    result += "}"
                case 2:
                    let argument = pick(["n", "m"])
                    let kind = pick(["plural", "selectordinal"])
                    var cases = ["=0", "=1", "one", "two", "few", "many"].filter { _ in chance(40) }
                    cases.append("other")
                    result += "{\(argument), \(kind),\(chance(20) && kind == "plural" ? " offset:1" : "")"
                    for keyword in cases { result += " \(keyword) {\(message(depth: depth + 1, inPlural: true))}" }
                    result += "}"
                default: result += "{\(pick(["n", "m"]))}"
                }
            }
            return result
        }

        mutating func values() -> [(name: String, value: ICUValue)] {
            let strings = ["warm", "cold", "absent", "K", "\u{212A}", "", "It's", "{s}", "'#'", "Zoë 😀", "x_y"]
            var values: [(name: String, value: ICUValue)] = [
                ("s", .string(pick(strings))), ("t", .string(pick(strings))),
                ("n", .integer(pick([0, 1, 2, 3, 5, 11, 21, 22, 101, 1_234, -1]))),
                ("m", chance(20) ? .decimal(pick(["1.5", "0.0", "2"])) : .integer(Int64(random.next() % 30))),
            ]
            // Sometimes an argument is missing: ICU writes its placeholder.
            if chance(10) { values.remove(at: Int(random.next() % UInt64(values.count))) }
            return values
        }
    }

    @Test(
        "Herald formats every random message ICU accepts exactly as ICU does",
        arguments: ["en", "pl", "ar-EG", "nb-NO"]
    )
    func agreesWithICU(locale: String) throws {
        var generator = Generator(random: SeededRandom(seed: 0x5EED_0000 &+ UInt64(locale.utf8.count)))
        var accepted = 0
        var disagreements: [String] = []
        for _ in 0..<1_500 {
            let pattern = generator.message(depth: 0, inPlural: false)
            guard let message = try? ICUMessage(locale: locale, pattern: pattern) else { continue }
            accepted += 1
            for _ in 0..<4 {
                let values = generator.values()
                let herald = Result { try message.format(values) }
                let icu = Result { try message.formatInICU(values) }
                switch (herald, icu) {
                case (.success(let a), .success(let b)) where a == b: continue
                case (.failure, .failure): continue
                default:
                    disagreements.append("\(pattern) with \(values): Herald \(herald), ICU \(icu)")
                }
            }
        }
        #expect(accepted > 500, "only \(accepted) messages accepted")
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.prefix(3))")
    }
}
