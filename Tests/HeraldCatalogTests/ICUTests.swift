import Testing

@testable import HeraldCatalog

@Suite("ICU")
struct ICUTests {
    @Test("plural categories at 0, 1, 2, 5, 22 and 1.5 come out as CLDR says for en, pl and ar")
    func pluralCategories() {
        let numbers: [Double] = [0, 1, 2, 5, 22, 1.5]
        let categories = { (locale: String) in numbers.map { ICUPluralRules.category(of: $0, locale: locale) } }
        #expect(categories("en") == ["other", "one", "other", "other", "other", "other"])
        #expect(categories("pl") == ["many", "one", "few", "many", "few", "other"])
        #expect(categories("ar") == ["zero", "one", "two", "few", "many", "other"])
        #expect(ICUPluralRules.category(of: 2, locale: "en", ordinal: true) == "two")
        #expect(ICUPluralRules.category(of: 23, locale: "en", ordinal: true) == "few")
    }

    @Test("plural with =N, categories and #, select and selectordinal, formatted by ICU")
    func messageFormat() throws {
        let pattern =
            "{count, plural, =0 {No new messages} one {# new message} other {# new messages}} from {sender}"
        let en = try ICUMessage(locale: "en", pattern: pattern)
        #expect(try en.format([("count", .integer(0)), ("sender", .string("Ana"))]) == "No new messages from Ana")
        #expect(try en.format([("count", .integer(1)), ("sender", .string("Ana"))]) == "1 new message from Ana")
        #expect(
            try en.format([("count", .integer(1234)), ("sender", .string("Ana"))]) == "1,234 new messages from Ana"
        )

        let pl = try ICUMessage(
            locale: "pl",
            pattern: "{count, plural, one {# wiadomość} few {# wiadomości} many {# wiadomości} other {# wiadomości}}"
        )
        #expect(try pl.format([("count", .integer(22))]) == "22 wiadomości")

        let select = try ICUMessage(
            locale: "en",
            pattern:
                "{channel, select, sms {by text} push {on your phone} other {somehow}}, {place, selectordinal, one {#st} two {#nd} few {#rd} other {#th}}"
        )
        #expect(try select.format([("channel", .string("push")), ("place", .integer(3))]) == "on your phone, 3rd")
        #expect(select.arguments.map(\.name) == ["channel", "place"])
        #expect(select.arguments.map(\.kind) == [.select, .selectOrdinal])
        #expect(select.arguments[0].selectKeywords == ["sms", "push", "other"])
    }

    @Test("a use inside a non-absent case of a select on the same argument is guarded")
    func guardedUses() throws {
        let message = try ICUMessage(
            locale: "en",
            pattern: "Order {id}{note, select, absent {} other { · {note}}}{gift, select, absent {{gift}} other {}}"
        )
        let uses = message.arguments.map { "\($0.name):\($0.isGuarded)" }
        #expect(uses == ["id:false", "note:false", "note:true", "gift:false", "gift:false"])
        #expect(
            try message.format([("id", .string("7")), ("note", .string("absent")), ("gift", .string("x"))]) == "Order 7"
        )
        #expect(
            try message.format([("id", .string("7")), ("note", .string("leave at door")), ("gift", .string("x"))])
                == "Order 7 · leave at door"
        )
    }

    @Test("a result longer than the first output buffer comes back whole")
    func longResult() throws {
        let message = try ICUMessage(
            locale: "pl",
            pattern: "Treść: {text} ({n, plural, one {# znak} few {# znaki} many {# znaków} other {# znaku}})"
        )
        let text = String(repeating: "żółć 😀 ", count: 300)
        let formatted = try message.format([("text", .string(text)), ("n", .integer(24))])
        #expect(formatted.utf8.count > 4_000)
        #expect(formatted == "Treść: \(text) (24 znaki)")
    }

    @Test("invalid syntax and numbered arguments are rejected with a position")
    func invalidPatterns() {
        let unclosed = #expect(throws: ICUError.self) { try ICUMessage(locale: "en", pattern: "Hello {name") }
        #expect(unclosed?.offset != nil)
        let numbered = #expect(throws: ICUError.self) { try ICUMessage(locale: "en", pattern: "Hello {0}") }
        #expect(numbered?.message.contains("numbered") == true)
        #expect(throws: ICUError.self) { try ICUMessage(locale: "en", pattern: "{n, plural, one {x}}") }
    }

    @Test("nb money reads like 1 234,50 kr, and other locales use their own conventions")
    func money() throws {
        let nok = try ICUNumberFormatter(locale: "nb", currency: "NOK")
        // CLDR 42's own nb pattern puts the symbol first; the catalog can set the house style.
        #expect(try nok.format(decimal: "1234.50") == "kr\u{A0}1\u{A0}234,50")
        let suffixed = try ICUNumberFormatter(locale: "nb", currency: "NOK", pattern: "#,##0.00\u{A0}¤")
        #expect(try suffixed.format(decimal: "1234.50") == "1\u{A0}234,50\u{A0}kr")
        #expect(try suffixed.format(decimal: "0.5") == "0,50\u{A0}kr")
        let eur = try ICUNumberFormatter(locale: "de", currency: "EUR")
        #expect(try eur.format(decimal: "1234.5") == "1.234,50\u{A0}€")
        let usd = try ICUNumberFormatter(locale: "en", currency: "USD")
        #expect(try usd.format(decimal: "0.1") == "$0.10")
        #expect(throws: ICUError.self) { try ICUNumberFormatter(locale: "en", currency: "NOTACURRENCY") }
        #expect(throws: ICUError.self) { try usd.format(decimal: "12abc") }
    }

    @Test("datetimes render in the recipient's time zone with the right offset across a DST change")
    func dates() throws {
        let oslo = try ICUDateFormatter(locale: "nb", timeZone: "Europe/Oslo", style: "HHmmz")
        // 2026-03-29 00:30 UTC is 01:30 CET (+1); an hour later, clocks jump: 03:30 CEST (+2).
        let before = 1_774_744_200_000.0
        #expect(oslo.format(epochMilliseconds: before) == "01:30 CET")
        #expect(oslo.format(epochMilliseconds: before + 3_600_000) == "03:30 CEST")
        let newYork = try ICUDateFormatter(locale: "en", timeZone: "America/New_York", style: "yMMMdjmm")
        // ICU 72 separates "PM" with a narrow no-break space.
        #expect(newYork.format(epochMilliseconds: before) == "Mar 28, 2026, 8:30\u{202F}PM")
        #expect(throws: ICUError.self) { try ICUDateFormatter(locale: "en", timeZone: "Mars/Olympus", style: "short") }
    }
}
