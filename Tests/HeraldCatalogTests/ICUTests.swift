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

    @Test("a value formatted again is answered from the thread's recent results, and nothing else is")
    func formattersRememberRecentValues() throws {
        // Each thread keeps its last few inputs and texts per formatter; a stale or mismatched one
        // would show here.
        let eur = try ICUNumberFormatter(locale: "de", currency: "EUR")
        let plain = try ICUNumberFormatter(locale: "en", currency: nil)
        let sequence = ["1234.5", "1234.5", "1234.50", "0.1", "1234.5", "12", "123", "12"]
        #expect(
            try sequence.map { try eur.format(decimal: $0) } == [
                "1.234,50\u{A0}€", "1.234,50\u{A0}€", "1.234,50\u{A0}€", "0,10\u{A0}€", "1.234,50\u{A0}€",
                "12,00\u{A0}€", "123,00\u{A0}€", "12,00\u{A0}€",
            ]
        )
        // A rejected value leaves the last good one in place.
        #expect(throws: ICUError.self) { try eur.format(decimal: "12abc") }
        #expect(try eur.format(decimal: "12") == "12,00\u{A0}€")
        // The same value through another formatter is that formatter's text.
        #expect(try plain.format(decimal: "12") == "12")
        #expect(try eur.format(decimal: "12") == "12,00\u{A0}€")
        // A result longer than the first output buffer: the second call, with room, finds it among
        // the recent results.
        let long = String(repeating: "9", count: 60)
        let grouped = try plain.format(decimal: long)
        #expect(grouped == stride(from: 0, to: 60, by: 3).map { _ in "999" }.joined(separator: ","))
        #expect(try plain.format(decimal: long) == grouped)

        let oslo = try ICUDateFormatter(locale: "nb", timeZone: "Europe/Oslo", style: "HHmm")
        let moments = [0.0, 0, 60_000, 0, 60_000, 60_000, 3_600_000]
        #expect(
            moments.map { oslo.format(epochMilliseconds: $0) } == [
                "01:00", "01:00", "01:01", "01:00", "01:01", "01:01", "02:00",
            ]
        )
        let london = try ICUDateFormatter(locale: "en", timeZone: "Europe/London", style: "HHmm")
        #expect(london.format(epochMilliseconds: 0) == "01:00")  // 1970: British Standard Time, +1
        #expect(london.format(epochMilliseconds: 1_774_744_200_000) == "00:30")
        #expect(oslo.format(epochMilliseconds: 1_774_744_200_000) == "01:30")
    }

    @Test("a formatter made where a freed one was is not answered with the freed one's texts")
    func formattersAreRememberedByIdentity() throws {
        // Freed and made in turn, the two often share an address; the texts must not follow it.
        for round in 0..<50 {
            let eur = try ICUNumberFormatter(locale: "de", currency: "EUR")
            #expect(try eur.format(decimal: "7") == "7,00\u{A0}€", "round \(round)")
            let usd = try ICUNumberFormatter(locale: "en", currency: "USD")
            #expect(try usd.format(decimal: "7") == "$7.00", "round \(round)")
            let utc = try ICUDateFormatter(locale: "en", timeZone: "UTC", style: "HHmm")
            #expect(utc.format(epochMilliseconds: 0) == "00:00", "round \(round)")
            let tokyo = try ICUDateFormatter(locale: "en", timeZone: "Asia/Tokyo", style: "HHmm")
            #expect(tokyo.format(epochMilliseconds: 0) == "09:00", "round \(round)")
        }
    }

    @Test("formatters shared by threads give each caller its own value's text")
    func formattersAcrossThreads() async throws {
        let eur = try ICUNumberFormatter(locale: "de", currency: "EUR")
        let oslo = try ICUDateFormatter(locale: "nb", timeZone: "Europe/Oslo", style: "HHmm")
        let values = [
            ("1", "1,00\u{A0}€", 0.0, "01:00"), ("2", "2,00\u{A0}€", 60_000, "01:01"),
            ("3", "3,00\u{A0}€", 120_000, "01:02"),
        ]
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for task in 0..<4 {
                group.addTask {
                    var mismatches = 0
                    for round in 0..<3_000 {
                        let (decimal, money, moment, time) = values[(round + task) % values.count]
                        if (try? eur.format(decimal: decimal)) != money { mismatches += 1 }
                        if oslo.format(epochMilliseconds: moment) != time { mismatches += 1 }
                    }
                    return mismatches
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
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

    @Test("dates before the Gregorian reform of 1582 are proleptic Gregorian, as RFC 3339 times are")
    func prolepticGregorian() throws {
        let utc = try ICUDateFormatter(locale: "en", timeZone: "UTC", style: "yMMMd")
        // 1500-03-01, 1582-10-10 (a date the reform skipped) and 0001-01-01, at noon UTC.
        #expect(utc.format(epochMilliseconds: -14_826_628_800_000) == "Mar 1, 1500")
        #expect(utc.format(epochMilliseconds: -12_219_681_600_000) == "Oct 10, 1582")
        #expect(utc.format(epochMilliseconds: -62_135_553_600_000) == "Jan 1, 1")
        let nb = try ICUDateFormatter(locale: "nb", timeZone: "Europe/Oslo", style: "yMMMMd")
        #expect(nb.format(epochMilliseconds: -14_826_628_800_000) == "1. mars 1500")
    }

    @Test(
        "a remembered date text is reused only within the span its pattern shows, in local time",
        arguments: [
            ("en-GB", "Europe/Oslo", "yMMMMEEEEd"), ("en-GB", "Europe/Oslo", "yMMMdjmm"),
            ("nb", "Europe/Oslo", "Hms"), ("en", "America/New_York", "jmm"), ("en", "Africa/Monrovia", "Hm"),
            ("ar-EG", "Africa/Cairo", "yMMMd"), ("en", "Asia/Kolkata", "yMMMdjmm"), ("en", "Europe/Oslo", "HHmmz"),
        ]
    )
    func rememberedDates(locale: String, timeZone: String, style: String) throws {
        let formatter = try ICUDateFormatter(locale: locale, timeZone: timeZone, style: style)
        let minute = 60_000.0
        // Local midnight in Oslo, a minute and an hour turning, both DST changes of 2026 in Oslo and
        // New York's spring one, a half-hour zone's hour, and 1971 in Monrovia (-00:44:30, so a local
        // minute is not a UTC one): each moment next to one just across the boundary.
        let anchors: [Double] = [
            1_795_474_800_000, 1_795_516_260_000, 1_795_518_000_000, 1_774_746_000_000, 1_792_890_000_000,
            1_772_953_200_000, 1_795_440_600_000, 44_585_070_000,
        ]
        var moments: [Double] = []
        for anchor in anchors {
            moments += [anchor - 1, anchor, anchor + 1, anchor + 59_999, anchor - minute, anchor + 3_600_000]
        }
        // Twice over, so that the second pass meets texts remembered in the first.
        for moment in moments + moments.reversed() {
            // A new formatter has a new id: it remembers nothing, so ICU formats the moment itself.
            let fresh = try ICUDateFormatter(locale: locale, timeZone: timeZone, style: style)
            #expect(
                formatter.format(epochMilliseconds: moment) == fresh.format(epochMilliseconds: moment),
                "\(style) in \(timeZone) at \(moment)"
            )
        }
    }

    @Test("a message of inserted and selected arguments is formatted without ICU, exactly as ICU would")
    func plainMessages() throws {
        // Apostrophes quote in ICU ('' is one; '{' starts quoted text); selects nest; an argument
        // is both selected on and inserted.
        let pattern =
            "It''s '{'{name}'}' {place, select, absent {} other {near {place}}}{tone, select, warm {, {name}''s {tone, select, warm {friend} other {?}}} cold {.} other { ({tone})}}"
        let message = try ICUMessage(locale: "en", pattern: pattern)
        #expect(message.isPlain)
        let values: [[(name: String, value: ICUValue)]] = [
            [("name", .string("Ana")), ("place", .string("absent")), ("tone", .string("warm"))],
            [("name", .string("Ola")), ("place", .string("Oslo, Norway")), ("tone", .string("cold"))],
            [("tone", .string("lukewarm")), ("name", .string("«Zoë» 😀")), ("place", .string("{place}"))],
            [("name", .string("")), ("place", .string("warm")), ("tone", .string(""))],
        ]
        for arguments in values {
            #expect(try message.format(arguments) == message.formatInICU(arguments))
        }
        #expect(try message.format(values[0]) == "It's {Ana} , Ana's friend")
        #expect(try message.format(values[1]) == "It's {Ola} near Oslo, Norway.")

        // Keywords match code unit for code unit, as in ICU: the Kelvin sign is canonically
        // equivalent to "K", but selects `other`.
        let kelvin = try ICUMessage(locale: "en", pattern: "{unit, select, K {kelvin} other {{unit}?}}")
        #expect(kelvin.isPlain)
        #expect(try kelvin.format([("unit", .string("\u{212A}"))]) == "\u{212A}?")
        #expect(try kelvin.format([("unit", .string("K"))]) == "kelvin")

        // Not a string, or not given: ICU formats it (a grouped number; the placeholder).
        let inserted = try ICUMessage(locale: "en", pattern: "{count} from {sender}")
        #expect(inserted.isPlain)
        #expect(try inserted.format([("count", .integer(1234)), ("sender", .string("Ana"))]) == "1,234 from Ana")
        #expect(try inserted.format([("count", .string("x"))]) == inserted.formatInICU([("count", .string("x"))]))

        // Plurals depend on the locale's rules: ICU formats them.
        let plural = try ICUMessage(locale: "en", pattern: "{n, plural, one {# item} other {# items}} for {name}")
        #expect(!plural.isPlain)
        #expect(try plural.format([("n", .integer(2)), ("name", .string("Ana"))]) == "2 items for Ana")
    }

    @Test(
        "a message that counts is compiled for each count and formats as ICU formats it",
        arguments: ["en", "pl", "ar-EG", "nb-NO", "de", "fr"]
    )
    func countedMessages(locale: String) throws {
        // Explicit values, categories, '#' in a nested select, an ordinal, quoting, two counts,
        // a count also inserted as a number, and an argument both inserted and selected on.
        let patterns = [
            "{n, plural, =0 {no items} one {# item} few {# items (few)} many {# items (many)} other {# items}} for {name}",
            "{n, plural, one {# new message} other {# new messages}} from {sender}{others, plural, =0 {} one { and # other} other { and # others}}",
            "It''s {n, plural, one {'{'#'}' {tone, select, warm {warm #} other {#, {tone}}}} other {{n} of {name}}}",
            "{n, selectordinal, one {#st} two {#nd} few {#rd} other {#th}} place, {n} in all",
            "{n, plural, offset:1 =0 {nobody} =1 {{name}} one {{name} and # other} other {{name} and # others}}",
        ]
        var counts: [Int64] = Array(0...30) + [99, 100, 101, 1_000, 1_234_567, -1, -2]
        counts += counts.reversed()
        for pattern in patterns {
            let message = try ICUMessage(locale: locale, pattern: pattern)
            #expect(!message.isPlain)
            for (index, count) in counts.enumerated() {
                let arguments: [(name: String, value: ICUValue)] = [
                    ("n", .integer(count)), ("name", .string("Ana «x» ''")), ("sender", .string("Ola")),
                    ("others", .integer(Int64(index % 4))), ("tone", .string(index % 3 == 0 ? "warm" : "cold")),
                ]
                #expect(
                    try message.format(arguments) == message.formatInICU(arguments),
                    "\(locale) \(pattern) with \(count)"
                )
            }
            // Each tuple of counts compiled once, up to the limit; past it ICU formats new ones.
            #expect(message.compiledCounts > 0)
            #expect(message.compiledCounts <= ICUMessage.countedVariantLimit)
            // Not a whole number: ICU formats it (a decimal), or fails as ICU fails (a string).
            let decimal: [(name: String, value: ICUValue)] = [
                ("n", .decimal("1.5")), ("name", .string("Ana")), ("sender", .string("Ola")),
                ("others", .integer(0)), ("tone", .string("warm")),
            ]
            #expect(try message.format(decimal) == message.formatInICU(decimal))
        }
        // Compiled for every count of a small range, the message reaches ICU no more for them;
        // past the limit, new counts are formatted by ICU, alike.
        let items = try ICUMessage(locale: locale, pattern: patterns[0])
        for count in 0..<10 { _ = try items.format([("n", .integer(Int64(count))), ("name", .string("Ana"))]) }
        #expect(items.compiledCounts == 10)
        for count in Int64(0)..<100 {
            let arguments: [(name: String, value: ICUValue)] = [("n", .integer(count)), ("name", .string("Ana"))]
            #expect(try items.format(arguments) == items.formatInICU(arguments))
        }
        #expect(items.compiledCounts == ICUMessage.countedVariantLimit)
    }

    @Test("every message of the example catalog formats as ICU formats it, plain or not")
    func examplePlainMessages() throws {
        let catalog = try CatalogLoader.load(directory: exampleCatalog).catalog
        let samples: [ICUValue] = [
            .string("absent"), .string("card_declined"), .string("insufficient_funds"), .string("Oslo"),
            .string("Ana «x» ''"), .integer(3), .integer(1),
        ]
        var plain = 0
        for (locale, bundle) in catalog.bundles {
            for (key, message) in bundle.messages {
                let names = Array(message.argumentNames).sorted()
                for offset in samples.indices {
                    let arguments = names.enumerated().map { index, name in
                        (name: name, value: samples[(index + offset) % samples.count])
                    }
                    // nil for a throw: ICU cannot format a non-number for a plural, plain or not.
                    let formatted = try? message.format(arguments)
                    let expected = try? message.formatInICU(arguments)
                    #expect(formatted == expected, "\(locale) \(key) with \(arguments)")
                }
                if message.isPlain { plain += 1 }
            }
        }
        // Most of the catalog's messages with arguments are plain: the example kinds' titles and
        // bodies but for plurals and numbers.
        #expect(plain >= 5 * 7)
    }
}
