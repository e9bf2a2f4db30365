import Foundation
import HeraldEvents
import Testing

@testable import HeraldCatalog

@Suite("Rendering the example catalog")
struct RenderTests {
    let catalog: Catalog
    let renderer: Renderer

    init() throws {
        let (catalog, warnings) = try CatalogLoader.load(directory: exampleCatalog)
        #expect(warnings.isEmpty, "\(warnings)")
        self.catalog = catalog
        renderer = Renderer(catalog: catalog)
    }

    @Test("every example kind renders in every example locale; the output matches the reviewed goldens")
    func goldens() throws {
        var lines: [String] = []
        for kind in catalog.kinds {
            let event = try sampleEvent(kind.name)
            #expect(catalog.kind(for: event)?.name == kind.name)
            for locale in catalog.settings.locales {
                let rendered = try renderer.render(event, as: kind, locale: locale, timeZone: "Europe/Oslo")
                #expect(rendered.locale == locale && !rendered.usedFallbackLocale)
                for text in [rendered.title, rendered.body] {
                    // A silent or badge-only push has no text at all.
                    #expect(kind.presentation.showsText ? !text.isEmpty : text.isEmpty, "\(kind.name)")
                    #expect(!text.contains("{") && !text.contains("absent") && !text.contains("null"))
                }
                lines.append(
                    [kind.name, locale, rendered.title, rendered.body, rendered.deepLink?.preferred ?? "-"].joined(
                        separator: " | "
                    )
                )
            }
        }
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Goldens/render.txt"
        )
        let actual = lines.joined(separator: "\n") + "\n"
        if ProcessInfo.processInfo.environment["HERALD_UPDATE_GOLDENS"] != nil {
            try actual.write(to: golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: golden, encoding: .utf8)
        #expect(actual == expected, "rendering changed; review and run with HERALD_UPDATE_GOLDENS=1 to accept")
    }

    @Test("nb renders amounts like 1 234,50 kr and times in Oslo time")
    func norwegian() throws {
        let order = try renderer.render(
            try sampleEvent("order.confirmed"),
            as: catalog.kind(named: "order.confirmed")!,
            locale: "nb",
            timeZone: "Europe/Oslo"
        )
        #expect(order.body.contains("1\u{A0}234,50\u{A0}kr"))
        // 22:15 UTC is 23:15 in Oslo in November (CET).
        let login = try renderer.render(
            try sampleEvent("security.login"),
            as: catalog.kind(named: "security.login")!,
            locale: "nb",
            timeZone: "Europe/Oslo"
        )
        #expect(login.body.contains("21. nov. 2026, 23:15"))
        let newYork = try renderer.render(
            try sampleEvent("security.login"),
            as: catalog.kind(named: "security.login")!,
            locale: "en",
            timeZone: "America/New_York"
        )
        #expect(newYork.body.contains("Nov 21, 2026, 5:15\u{202F}PM"))
    }

    @Test("a missing optional field renders without null, absent or a dangling separator")
    func optionalField() throws {
        var event = try sampleEvent("order.confirmed")
        guard case .object(var data) = event.data else {
            Issue.record("no data")
            return
        }
        data.members.removeAll { $0.key == "deliveryNote" }
        event.data = .object(data)
        let rendered = try renderer.render(
            event,
            as: catalog.kind(named: "order.confirmed")!,
            locale: "en",
            timeZone: "UTC"
        )
        #expect(rendered.body == "Your order ord-7f3a of NOK\u{A0}1,234.50 (3 items) is confirmed.")
    }

    @Test("hostile deep-link values are encoded as one path segment")
    func hostileDeepLinks() throws {
        let kind = catalog.kind(named: "order.confirmed")!
        for (orderId, path) in [
            ("../x?y=1", "/orders/..%2Fx%3Fy%3D1"), ("..", "/orders/%2E%2E"), ("a b#c", "/orders/a%20b%23c"),
            ("ord-7", "/orders/ord-7"), ("ø/å", "/orders/%C3%B8%2F%C3%A5"), ("v1.2", "/orders/v1.2"),
            (".", "/orders/%2E"), ("~a_Z-9", "/orders/~a_Z-9"),
        ] {
            var event = try sampleEvent("order.confirmed")
            var data = try dataObject(of: event)
            data.members = data.members.map { $0.key == "orderId" ? ($0.key, .string(orderId)) : $0 }
            event.data = .object(data)
            let link = try renderer.render(event, as: kind, locale: "en", timeZone: "UTC").deepLink
            #expect(link?.path == path)
            #expect(link?.schemeURL == "drop:/\(path)")
            #expect(link?.universalURL == "https://getdrop.no\(path)")
        }
    }

    @Test("a datetime field renders in the recipient's zone with the right offset on both sides of a DST change")
    func daylightSaving() throws {
        let kind = catalog.kind(named: "security.login")!
        var event = try sampleEvent("security.login")
        // 00:30 UTC on 29 March 2026 is 01:30 in Oslo (CET); an hour later it is 03:30 (CEST).
        event.time = Timestamp(rfc3339: "2026-03-29T00:30:00Z")
        let before = try renderer.render(event, as: kind, locale: "de", timeZone: "Europe/Oslo").body
        event.time = Timestamp(rfc3339: "2026-03-29T01:30:00Z")
        let after = try renderer.render(event, as: kind, locale: "de", timeZone: "Europe/Oslo").body
        #expect(before.contains("29. März 2026, 01:30"))
        #expect(after.contains("29. März 2026, 03:30"))
        // New York changes on another day: 8 March 2026, 02:00 local.
        event.time = Timestamp(rfc3339: "2026-03-08T06:30:00Z")
        #expect(
            try renderer.render(event, as: kind, locale: "en", timeZone: "America/New_York").body.contains(
                "1:30\u{202F}AM"
            )
        )
        event.time = Timestamp(rfc3339: "2026-03-08T07:30:00Z")
        #expect(
            try renderer.render(event, as: kind, locale: "en", timeZone: "America/New_York").body.contains(
                "3:30\u{202F}AM"
            )
        )
    }

    @Test("locale fallback: language-REGION, then language, then the catalog default; fallbacks are counted")
    func fallback() throws {
        let before = renderer.fallbackLocaleCount
        _ = try renderer.render(
            try sampleEvent("promo.offer"),
            as: catalog.kind(named: "promo.offer")!,
            locale: "fr-CA",
            timeZone: "UTC"
        )
        _ = try renderer.render(
            try sampleEvent("promo.offer"),
            as: catalog.kind(named: "promo.offer")!,
            locale: "pl",
            timeZone: "UTC"
        )
        #expect(renderer.fallbackLocaleCount == before + 1)
        #expect(catalog.resolveLocale("nb-NO") == ("nb", true))
        #expect(catalog.resolveLocale("pl_PL") == ("pl", true))
        #expect(catalog.resolveLocale("nb-Latn-NO") == ("nb", true), "shortened one subtag at a time")
        #expect(catalog.resolveLocale("-") == ("nb", true))
        #expect(catalog.resolveLocale("de") == ("de", false))
        #expect(catalog.resolveLocale("fr-FR") == ("nb", true))
        #expect(catalog.resolveLocale(nil) == ("nb", true))
    }

    @Test("digest summaries pluralize in en and pl")
    func digests() throws {
        let kind = catalog.kind(named: "message.received")!
        let event = try sampleEvent("message.received")
        func summary(_ locale: String, count: Int64, others: Int64) throws -> String {
            try renderer.render(
                event,
                as: kind,
                locale: locale,
                timeZone: "UTC",
                extra: [("count", .int(count)), ("others", .int(others))],
                useDigestSummary: true
            ).body
        }
        #expect(try summary("en", count: 1, others: 0) == "1 new message from Ana")
        #expect(try summary("en", count: 5, others: 2) == "5 new messages from Ana and 2 others")
        #expect(try summary("pl", count: 2, others: 1) == "2 nowe wiadomości od Ana i 1 innej osoby")
        #expect(try summary("pl", count: 5, others: 3) == "5 nowych wiadomości od Ana i 3 innych osób")
        #expect(try summary("pl", count: 22, others: 0) == "22 nowe wiadomości od Ana")
    }

    @Test("a digest of collected messages: count, the latest sender and the other senders, in en and pl")
    func digestOfEvents() throws {
        let kind = catalog.kind(named: "message.received")!
        let sample = try sampleEvent("message.received")
        func message(_ id: String, from sender: String) -> CloudEvent {
            var event = sample
            event.id = id
            if case .object(var data)? = event.data {
                data.members = data.members.map { $0.key == "senderName" ? ($0.key, .string(sender)) : $0 }
                event.data = .object(data)
            }
            return event
        }
        let events = [
            message("m1", from: "Ola"), message("m2", from: "Kari"), message("m3", from: "Ola"),
            message("m4", from: "Ana"), message("m5", from: "Ana"),
        ]
        let english = try renderer.renderDigest(events, as: kind, locale: "en", timeZone: "UTC")
        #expect(english.body == "5 new messages from Ana and 2 others")
        #expect(english.title == "Ana")
        #expect(english.data.first { $0.key == "eventId" }?.value == "m5")
        let polish = try renderer.renderDigest(events, as: kind, locale: "pl", timeZone: "UTC")
        #expect(polish.body == "5 nowych wiadomości od Ana i 2 innych osób")
        let single = try renderer.renderDigest([message("m6", from: "Ana")], as: kind, locale: "pl", timeZone: "UTC")
        #expect(single.body == "1 nowa wiadomość od Ana")
        #expect(throws: RenderError.self) { try renderer.renderDigest([], as: kind, locale: "en", timeZone: "UTC") }
    }

    @Test("recipients come from the kind's path: one id or a list, deduplicated; none is an error")
    func recipients() throws {
        #expect(
            try renderer.recipients(
                of: try sampleEvent("order.confirmed"),
                kind: catalog.kind(named: "order.confirmed")!
            ) == ["u-1024"]
        )
        let promo = catalog.kind(named: "promo.offer")!
        var event = try sampleEvent("promo.offer")
        #expect(try renderer.recipients(of: event, kind: promo) == ["u-1024", "u-2048"])
        var data = try dataObject(of: event)
        data.members = data.members.map {
            $0.key == "userIds" ? ($0.key, .array([.string("a"), .string("b"), .string("a")])) : $0
        }
        event.data = .object(data)
        #expect(try renderer.recipients(of: event, kind: promo) == ["a", "b"])
        // As many as an event's 256 KB holds, each twice: a set, not a search per id, finds the repeats.
        let many = (0..<40_000).map { "u\($0)" }
        data.members = data.members.map {
            $0.key == "userIds" ? ($0.key, .array((many + many.reversed()).map(JSONValue.string))) : $0
        }
        event.data = .object(data)
        #expect(try renderer.recipients(of: event, kind: promo) == many)
        // A user id longer than the directory holds, in a list of good ones.
        let long = String(repeating: "u", count: Renderer.maximumRecipientBytes + 1)
        data.members = data.members.map {
            $0.key == "userIds" ? ($0.key, .array([.string("a"), .string(long)])) : $0
        }
        event.data = .object(data)
        let tooLong = #expect(throws: RenderError.self) { try renderer.recipients(of: event, kind: promo) }
        #expect(tooLong?.code == .missingRecipient)
        #expect(tooLong?.message == "a recipient at data.userIds is 1025 bytes long; user ids are at most 1024")
        data.members = data.members.map { $0.key == "userIds" ? ($0.key, .array([.string("a\u{0}b")])) : $0 }
        event.data = .object(data)
        let nul = #expect(throws: RenderError.self) { try renderer.recipients(of: event, kind: promo) }
        #expect(nul?.message == "a recipient at data.userIds contains U+0000, which no user id does")
        for broken: JSONValue in [.array([]), .number("7"), .array([.number("1")]), .string("")] {
            data.members = data.members.map { $0.key == "userIds" ? ($0.key, broken) : $0 }
            event.data = .object(data)
            let error = #expect(throws: RenderError.self) { try renderer.recipients(of: event, kind: promo) }
            #expect(error?.code == .missingRecipient)
        }
    }

    @Test("money and decimals must be finite decimal numbers, currencies three letters (inf rendered as ∞ €)")
    func moneyAndDecimalValues() throws {
        let kind = catalog.kind(named: "order.confirmed")!
        func rendered(amount: JSONValue, currency: JSONValue = .string("EUR")) throws -> String {
            let total = JSONValue.object(JSONObject([("amount", amount), ("currency", currency)]))
            let changed = try sampleEvent("order.confirmed", setting: "total", to: total)
            return try renderer.render(changed, as: kind, locale: "en", timeZone: "UTC").body
        }
        for amount: JSONValue in [
            .string("inf"), .string("-inf"), .string("nan"), .string("NaN"), .string("Infinity"), .string("0x1p3"),
            .string("+5"), .string(".5"), .string("5."), .string(""), .string(" 5"), .string("1,000"),
            .string("1e400"), .number("1e400"), .number("-1e400"),
        ] {
            let error = #expect(throws: RenderError.self, "\(amount)") { try rendered(amount: amount) }
            #expect(error?.code == .fieldTypeMismatch)
        }
        for currency: JSONValue in [.string("ÆØÅ"), .string("EU"), .string("EURO"), .string("E1R"), .number("978")] {
            let error = #expect(throws: RenderError.self, "\(currency)") {
                try rendered(amount: .number("5"), currency: currency)
            }
            #expect(error?.code == .fieldTypeMismatch)
        }
        for amount: JSONValue in [
            .string("5000"), .string("1234.50"), .string("-0.5"), .string("1e3"), .number("12.5"),
        ] {
            #expect(throws: Never.self, "\(amount)") { _ = try rendered(amount: amount) }
        }
        #expect(
            try rendered(amount: .string("1234.50"), currency: .string("eur")) == rendered(amount: .string("1234.50"))
        )
        #expect(try rendered(amount: .string("1234.50")).contains("1,234.50"))
        // XXX is ISO 4217's "no currency": the amount as a number, not ICU's generic sign ¤ (nb's
        // house pattern in the example catalog puts the sign after the amount).
        for locale in ["en", "nb"] {
            let total = JSONValue.object(JSONObject([("amount", .string("1234.50")), ("currency", .string("XXX"))]))
            let changed = try sampleEvent("order.confirmed", setting: "total", to: total)
            let body = try renderer.render(changed, as: kind, locale: locale, timeZone: "UTC").body
            #expect(!body.contains("¤") && !body.contains("XXX"), "\(locale): \(body)")
            #expect(body.contains(locale == "en" ? "1,234.5" : "1\u{A0}234,5"), "\(locale): \(body)")
        }

        #expect(Renderer.typed(.string("12.5"), as: .decimal) != nil)
        #expect(Renderer.typed(.number("-3e2"), as: .decimal) != nil)
        for text in ["inf", "nan", "0x10", "+1", "1e400", ""] {
            #expect(Renderer.typed(.string(text), as: .decimal) == nil, "\(text)")
        }
        #expect(Renderer.typed(.number("1e400"), as: .decimal) == nil)
        // Without an exponent only a number of more than 308 digits is infinite.
        #expect(Renderer.typed(.number(String(repeating: "9", count: 400)), as: .decimal) == nil)
        #expect(Renderer.typed(.number(String(repeating: "9", count: 300) + ".5"), as: .decimal) != nil)
    }

    @Test("an empty deep-link parameter fails naming the parameter, not as a missing one")
    func emptyDeepLinkParameter() throws {
        let kind = catalog.kind(named: "order.confirmed")!
        let event = try sampleEvent("order.confirmed", setting: "orderId", to: .string(""))
        let error = #expect(throws: RenderError.self) {
            try renderer.render(event, as: kind, locale: "en", timeZone: "UTC")
        }
        #expect(error?.code == .missingField)
        #expect(
            error?.message == "deep-link parameter 'orderId' of order.confirmed is empty: it cannot be a path segment"
        )
    }

    @Test("a title longer than 256 bytes is shortened at a grapheme boundary, with an ellipsis")
    func longTitles() throws {
        let kind = catalog.kind(named: "message.received")!
        let family = "👨‍👩‍👧‍👦"  // one grapheme of 25 bytes
        for (name, expected) in [
            (String(repeating: "A", count: 6000), String(repeating: "A", count: 253) + "…"),
            // 10 families are 250 bytes: the 11th would not fit beside the ellipsis and is not split.
            (String(repeating: family, count: 40), String(repeating: family, count: 10) + "…"),
            (String(repeating: "é", count: 128), String(repeating: "é", count: 128)),
        ] {
            let event = try sampleEvent("message.received", setting: "senderName", to: .string(name))
            let rendered = try renderer.render(event, as: kind, locale: "en", timeZone: "UTC")
            #expect(rendered.title == expected)
            #expect(rendered.title.utf8.count <= RenderedNotification.maximumHeadingBytes)
        }
    }

    @Test("the badge is the event's count where push.badge names a field; none without it; a negative count fails")
    func badges() throws {
        let kind = catalog.kind(named: "message.received")!
        func badge(_ event: CloudEvent) throws -> Int? {
            try renderer.render(event, as: kind, locale: "en", timeZone: "UTC").badge
        }
        #expect(try badge(sampleEvent("message.received")) == 3)
        #expect(try badge(sampleEvent("message.received", setting: "unreadCount", to: .number("0"))) == 0)
        var without = try sampleEvent("message.received")
        var data = try dataObject(of: without)
        data.members.removeAll { $0.key == "unreadCount" }
        without.data = .object(data)
        #expect(try badge(without) == nil, "an event without the count leaves the badge as it is")
        for count in ["-1", "2147483648"] {
            let event = try sampleEvent("message.received", setting: "unreadCount", to: .number(count))
            let failure = #expect(throws: RenderError.self) { try badge(event) }
            #expect(failure?.code == .fieldTypeMismatch)
            #expect(
                failure?.message.contains("'unreadCount' is not a badge count") == true,
                "\(failure?.message ?? "")"
            )
        }
        // A digest shows the newest event's count.
        let digest = try renderer.renderDigest(
            [
                sampleEvent("message.received", setting: "unreadCount", to: .number("4")),
                sampleEvent("message.received", setting: "unreadCount", to: .number("9")),
            ],
            as: kind,
            locale: "en",
            timeZone: "UTC"
        )
        #expect(digest.badge == 9)
        let order = try renderer.render(
            sampleEvent("order.confirmed"),
            as: catalog.kind(named: "order.confirmed")!,
            locale: "en",
            timeZone: "UTC"
        )
        #expect(order.badge == nil, "a kind without push.badge leaves the badge as it is")
    }

    @Test("the image is the event's https URL where push.image names a field; none without it; another URL fails")
    func images() throws {
        let kind = catalog.kind(named: "promo.offer")!
        func image(_ event: CloudEvent) throws -> String? {
            try renderer.render(event, as: kind, locale: "en", timeZone: "UTC").imageURL
        }
        #expect(try image(sampleEvent("promo.offer")) == "https://getdrop.no/images/offers/black-friday.jpg")
        for url in [
            "HTTPS://cdn.example/a.png", "https://cdn.example", "https://cdn.example/a%20b.png?w=2#x",
            "hTTpS://cdn.example/a.png",
        ] {
            #expect(try image(sampleEvent("promo.offer", setting: "imageUrl", to: .string(url))) == url)
        }
        var without = try sampleEvent("promo.offer")
        var data = try dataObject(of: without)
        data.members.removeAll { $0.key == "imageUrl" }
        without.data = .object(data)
        #expect(try image(without) == nil)
        for url in [
            "http://cdn.example/a.png", "https://", "https:///a.png", "https://cdn.example/a b.png",
            "cdn.example/a.png", "javascript:alert(1)", "https:/cdn.example/a.png", "https://?a.png", "https:",
        ] {
            let event = try sampleEvent("promo.offer", setting: "imageUrl", to: .string(url))
            let failure = #expect(throws: RenderError.self, "\(url)") { try image(event) }
            #expect(failure?.code == .fieldTypeMismatch)
            #expect(failure?.message == "field 'imageUrl' is not an https URL of an image", "\(url)")
        }
        // The other kinds have none.
        let order = try renderer.render(
            sampleEvent("order.confirmed"),
            as: catalog.kind(named: "order.confirmed")!,
            locale: "en",
            timeZone: "UTC"
        )
        #expect(order.imageURL == nil)
    }

    @Test("a field of the wrong type or a missing required field fails with its code and name")
    func fieldErrors() throws {
        let kind = catalog.kind(named: "order.confirmed")!
        var event = try sampleEvent("order.confirmed", setting: "itemCount", to: .string("three"))
        let mismatch = #expect(throws: RenderError.self) {
            try renderer.render(event, as: kind, locale: "en", timeZone: "UTC")
        }
        #expect(mismatch?.code == .fieldTypeMismatch)
        #expect(mismatch?.message.contains("itemCount") == true)
        #expect(mismatch?.message.contains("three") == false, "event data never appears in errors")

        var withoutOrder = try sampleEvent("order.confirmed")
        var original = try dataObject(of: withoutOrder)
        original.members.removeAll { $0.key == "orderId" }
        withoutOrder.data = .object(original)
        event = withoutOrder
        let missing = #expect(throws: RenderError.self) {
            try renderer.render(event, as: kind, locale: "en", timeZone: "UTC")
        }
        #expect(missing?.code == .missingField)
        #expect(missing?.message.contains("orderId") == true)
    }
}

/// The example catalog's sample event of `kind` with its data member `key` set to `value`.
private func sampleEvent(_ kind: String, setting key: String, to value: JSONValue) throws -> CloudEvent {
    var event = try sampleEvent(kind)
    var data = try dataObject(of: event)
    #expect(data.members.contains { $0.key == key }, "the sample \(kind) has no '\(key)'")
    data.members = data.members.map { $0.key == key ? (key, value) : $0 }
    event.data = .object(data)
    return event
}

/// `event`'s data as an object: a test whose sample has none fails here, rather than returning
/// early and passing with nothing checked.
private func dataObject(of event: CloudEvent) throws -> JSONObject {
    let object: JSONObject? = if case .object(let data) = event.data { data } else { nil }
    return try #require(object, "the sample event's data is not a JSON object")
}

@Suite("Render plans")
struct RenderPlanTests {
    /// Every kind in the catalog's locales and in ones that fall back, twice (the second time from
    /// the plans), as plain renders and as digest summaries.
    func renderAll(_ renderer: Renderer, plans: RenderPlans?) throws -> [RenderedNotification] {
        var rendered: [RenderedNotification] = []
        let requested: [String?] = renderer.catalog.settings.locales + ["nb-NO", "pl_PL", "fr-FR", nil]
        for _ in 0..<2 {
            for kind in renderer.catalog.kinds {
                let event = try sampleEvent(kind.name)
                for locale in requested {
                    rendered.append(
                        try renderer.render(event, as: kind, locale: locale, timeZone: "Europe/Oslo", plans: plans)
                    )
                    if kind.digestSummary != nil {
                        rendered.append(
                            try renderer.renderDigest(
                                [event, event],
                                as: kind,
                                locale: locale,
                                timeZone: "UTC",
                                plans: plans
                            )
                        )
                    }
                }
            }
        }
        return rendered
    }

    @Test("rendering through plans gives what rendering without them gives, fallbacks counted the same")
    func sameOutput() throws {
        let (catalog, _) = try CatalogLoader.load(directory: exampleCatalog)
        let renderer = Renderer(catalog: catalog)
        let withoutPlans = try renderAll(renderer, plans: nil)
        let fallbacks = renderer.fallbackLocaleCount
        let withPlans = try renderAll(renderer, plans: RenderPlans())
        #expect(withPlans == withoutPlans)
        #expect(renderer.fallbackLocaleCount == 2 * fallbacks, "each render through a plan counts its fallback")
        #expect(withPlans.contains { $0.usedFallbackLocale && $0.locale == "pl" })
        #expect(withPlans.contains { $0.body.contains("new messages") }, "digest summaries came from the plans")
    }

    @Test("a plan's formatters are kept by time zone, style and currency: past the few it keeps, renders still match")
    func keptFormatters() throws {
        let (catalog, _) = try CatalogLoader.load(directory: exampleCatalog)
        let renderer = Renderer(catalog: catalog)
        let plans = RenderPlans()
        let login = try sampleEvent("security.login")
        let loginKind = try #require(catalog.kind(named: "security.login"))
        // More zones than a plan keeps formatters for, twice over: the later ones come from the
        // renderer's shared cache, and a plan must never hand one zone's formatter to another.
        let zones = [
            "Europe/Oslo", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney", "America/Los_Angeles",
            "Europe/London", "Asia/Kolkata", "America/Sao_Paulo", "Pacific/Auckland", "Africa/Nairobi",
        ]
        #expect(zones.count > RenderPlan.keptFormatters)
        var bodies: Set<String> = []
        for _ in 0..<2 {
            for zone in zones {
                let planned = try renderer.render(login, as: loginKind, locale: "en", timeZone: zone, plans: plans)
                let alone = try renderer.render(login, as: loginKind, locale: "en", timeZone: zone)
                #expect(planned.body == alone.body, "\(zone)")
                bodies.insert(planned.body)
            }
        }
        #expect(bodies.count >= 8, "the zones' local times differ: \(bodies)")
        let orderKind = try #require(catalog.kind(named: "order.confirmed"))
        var totals: Set<String> = []
        for _ in 0..<2 {
            for currency in ["NOK", "USD", "EUR", "JPY", "GBP", "SEK", "DKK", "PLN", "CHF", "CAD"] {
                let order = try sampleEvent(
                    "order.confirmed",
                    setting: "total",
                    to: .object(JSONObject([("amount", .number("1234.50")), ("currency", .string(currency))]))
                )
                let planned = try renderer.render(order, as: orderKind, locale: "en", timeZone: "UTC", plans: plans)
                let alone = try renderer.render(order, as: orderKind, locale: "en", timeZone: "UTC")
                #expect(planned.body == alone.body, "\(currency)")
                totals.insert(planned.body)
            }
        }
        #expect(totals.count == 10, "each currency formats its own amount: \(totals)")
    }

    @Test("each render's data carries its own event's time through one plans object, repeated or alternating")
    func timesThroughPlans() throws {
        let (catalog, _) = try CatalogLoader.load(directory: exampleCatalog)
        let renderer = Renderer(catalog: catalog)
        let plans = RenderPlans()
        let kind = try #require(catalog.kind(named: "order.shipped"))
        var event = try sampleEvent("order.shipped")
        for milliseconds: Int64 in [
            1_795_000_000_000, 1_795_000_000_000, 1_795_000_000_001, 1_795_000_000_000, 0, 0, -1,
        ] {
            let time = Timestamp(epochMilliseconds: milliseconds)
            event.time = time
            let planned = try renderer.render(event, as: kind, locale: "en", timeZone: "UTC", plans: plans)
            #expect(planned.data.first { $0.key == "timestamp" }?.value == time.description, "\(milliseconds)")
            #expect(planned == (try renderer.render(event, as: kind, locale: "en", timeZone: "UTC")))
        }
    }

    @Test("plans kept for long hold a bounded number per kind, however many locales recipients name")
    func boundedPlans() throws {
        let (catalog, _) = try CatalogLoader.load(directory: exampleCatalog)
        let renderer = Renderer(catalog: catalog)
        let plans = RenderPlans()
        let kind = try #require(catalog.kind(named: "order.shipped"))
        let event = try sampleEvent("order.shipped")
        // Tags no catalog has (each falls back), as a directory of odd device locales would name.
        for number in 0..<(3 * RenderPlans.maximumPerKind) {
            let locale = "de-x-\(number)"
            let planned = try renderer.render(event, as: kind, locale: locale, timeZone: "UTC", plans: plans)
            let alone = try renderer.render(event, as: kind, locale: locale, timeZone: "UTC")
            #expect(planned == alone)
            #expect(plans.count <= RenderPlans.maximumPerKind)
        }
        #expect(plans.count > 0)
        let german = try renderer.render(event, as: kind, locale: "de", timeZone: "UTC", plans: plans)
        #expect(german.title == "Ihre Bestellung ist unterwegs")
    }

    @Test("one plans object used with the renderers of two catalogs renders each catalog's messages")
    func anotherCatalog() throws {
        let (catalog, _) = try CatalogLoader.load(directory: exampleCatalog)
        let changed = try brokenCatalog([
            "messages/en.json": {
                $0.replacingOccurrences(of: "\"Your order is on its way\"", with: "\"Shipped and on its way\"")
            }
        ])
        defer { try? FileManager.default.removeItem(atPath: changed) }
        let (changedCatalog, _) = try CatalogLoader.load(directory: changed)
        let plans = RenderPlans()
        let first = Renderer(catalog: catalog)
        let second = Renderer(catalog: changedCatalog)
        let event = try sampleEvent("order.shipped")
        func title(_ renderer: Renderer, _ locale: String) throws -> String {
            let kind = renderer.catalog.kind(named: "order.shipped")!
            return try renderer.render(event, as: kind, locale: locale, timeZone: "UTC", plans: plans).title
        }
        #expect(try title(first, "en") == "Your order is on its way")
        #expect(try title(second, "en") == "Shipped and on its way")
        #expect(try title(second, "de") == "Ihre Bestellung ist unterwegs")
        #expect(try title(first, "en") == "Your order is on its way", "and back")
    }
}
