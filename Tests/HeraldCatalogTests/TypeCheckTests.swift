import Foundation
import Testing

@testable import HeraldCatalog

/// Each type-check rule, shown by a copy of the example catalog with one thing broken.
@Suite("Catalog type check")
struct TypeCheckTests {
    func diagnostics(_ edits: [String: (String) -> String?]) throws -> [CatalogDiagnostic] {
        let directory = try brokenCatalog(edits)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let (_, warnings) = try CatalogLoader.load(directory: directory)
            return warnings
        } catch {
            return error.diagnostics
        }
    }

    func only(_ edits: [String: (String) -> String?]) throws -> CatalogDiagnostic? {
        let found = try diagnostics(edits)
        #expect(found.count == 1, "\(found)")
        return found.first
    }

    func replacing(_ old: String, _ new: String) -> (String) -> String? {
        { text in
            #expect(text.contains(old), "the example catalog no longer contains \(old)")
            return text.replacingOccurrences(of: old, with: new)
        }
    }

    @Test("a message that uses a field the kind does not declare")
    func undeclaredField() throws {
        let found = try only(["messages/de.json": replacing("{sender} hat Ihnen", "{absender} hat Ihnen")])
        #expect(found?.severity == .error)
        #expect(found?.file == "messages/de.json")
        #expect(found?.key == "payment.received.body")
        #expect(found?.message.contains("'absender'") == true)
    }

    @Test("plural or number over a non-numeric field")
    func pluralOverString() throws {
        let found = try only([
            "messages/en.json": replacing("{sender} sent you", "{sender, plural, one {#} other {#}} sent you")
        ])
        #expect(found?.file == "messages/en.json")
        #expect(found?.key == "payment.received.body")
        #expect(found?.message.contains("cannot be used as a number") == true)
    }

    @Test("invalid MessageFormat syntax")
    func invalidSyntax() throws {
        let found = try only(["messages/pl.json": replacing("\"{discount}% zniżki", "\"{discount% zniżki")])
        #expect(found?.file == "messages/pl.json")
        #expect(found?.key == "promo.offer.body")
        #expect(found?.message.contains("invalid MessageFormat") == true)
    }

    @Test("a locale missing a key of the default locale is an error; an extra key is a warning")
    func missingAndExtraKeys() throws {
        let missing = try only(["messages/ar.json": replacing("\"promo.offer.title\": \"{headline}\",", "")])
        #expect(missing?.severity == .error)
        #expect(missing?.file == "messages/ar.json")
        #expect(missing?.key == "promo.offer.title")

        let extra = try only(["messages/de.json": replacing("{\n", "{\n  \"promo.offer.footer\": \"Nur heute\",\n")])
        #expect(extra?.severity == .warning)
        #expect(extra?.key == "promo.offer.footer")
    }

    @Test("an unknown category or channel")
    func unknownCategoryAndChannel() throws {
        let category = try only(["kinds/promo.offer.yaml": replacing("category: marketing", "category: advertising")])
        #expect(category?.file == "kinds/promo.offer.yaml")
        #expect(category?.key == "category")
        let channel = try only([
            "kinds/promo.offer.yaml": replacing("androidChannel: marketing", "androidChannel: promos")
        ])
        #expect(channel?.key == "push.androidChannel")
    }

    @Test("a kind's name is 1 to 128 bytes")
    func kindNames() throws {
        for name in ["''", String(repeating: "k", count: 129)] {
            let found = try only(["kinds/promo.offer.yaml": replacing("kind: promo.offer", "kind: \(name)")])
            #expect(found?.file == "kinds/promo.offer.yaml")
            #expect(found?.key == "kind")
            #expect(found?.message == "must be a name of 1 to 128 bytes")
        }
    }

    @Test("two kinds claiming one event type without a rule to choose")
    func ambiguousEventType() throws {
        let found = try diagnostics([
            "kinds/order.shipped.yaml": replacing("events: [order.shipped]", "events: [order.shipped, order.confirmed]")
        ])
        #expect(found.count == 2)
        #expect(found.allSatisfy { $0.key == "events" && $0.message.contains("'order.confirmed'") })
        #expect(Set(found.map(\.file)) == ["kinds/order.shipped.yaml", "kinds/order.confirmed.yaml"])
    }

    @Test("a 'when' rule lets two kinds share an event type")
    func conditionalKinds() throws {
        let found = try diagnostics([
            "kinds/order.shipped.yaml": replacing(
                "events: [order.shipped]",
                "events: [order.shipped, order.confirmed]\nwhen: data.carrier == Posten"
            )
        ])
        #expect(found.isEmpty, "\(found)")
    }

    @Test("a deep-link parameter that is not a field")
    func deepLinkParameter() throws {
        let found = try only(["kinds/order.confirmed.yaml": replacing("/orders/{orderId}", "/orders/{order}")])
        #expect(found?.file == "kinds/order.confirmed.yaml")
        #expect(found?.key == "deepLink")
        #expect(found?.message.contains("'order'") == true)
    }

    @Test("an optional field shown outside its absent/other select")
    func unguardedOptionalField() throws {
        let found = try only([
            "messages/nb.json": replacing("{location, select, absent {} other { nær {location}}}", " nær {location}")
        ])
        #expect(found?.file == "messages/nb.json")
        #expect(found?.key == "security.login.body")
        #expect(found?.message.contains("optional field 'location'") == true)
    }

    @Test("a bad field type and a malformed path name their keys")
    func badFieldDefinitions() throws {
        let type = try only(["kinds/order.confirmed.yaml": replacing("type: int", "type: integer")])
        #expect(type?.key == "fields.itemCount.type")
        let path = try only(["kinds/order.confirmed.yaml": replacing("path: data.orderId", "path: payload.orderId")])
        #expect(path?.key == "fields.orderId.path")
        let trailingDot = try only([
            "kinds/order.confirmed.yaml": replacing("path: data.orderId", "path: data.orderId.")
        ])
        #expect(trailingDot?.key == "fields.orderId.path")
        // A key after an index is a path docs/catalog.md shows; the loader used to call it malformed.
        let indexed = try diagnostics([
            "kinds/order.confirmed.yaml": replacing("path: data.deliveryNote", #"path: "data.notes[0].text""#)
        ])
        #expect(indexed.isEmpty, "\(indexed)")
    }

    @Test("a time to live or throttle window out of range names its key (a huge one crashed catalog check)")
    func outOfRangeDurations() throws {
        for ttl in ["0", "2419201", "-5", "9223372036854775807"] {
            let found = try only(["kinds/order.confirmed.yaml": replacing("ttl: 86400", "ttl: \(ttl)")])
            #expect(found?.key == "push.ttl", "\(ttl)")
            #expect(found?.message.contains("2419200") == true)
        }
        #expect(try diagnostics(["kinds/order.confirmed.yaml": replacing("ttl: 86400", "ttl: 2419200")]).isEmpty)
        for window in ["367d", "999999999999999999d", "9223372036854775807s", "0s"] {
            let found = try only(["catalog.yaml": replacing("window: 7d", "window: \(window)")])
            #expect(found?.key == "policies.marketing.throttle[0].window", "\(window)")
        }
        #expect(try diagnostics(["catalog.yaml": replacing("window: 7d", "window: 366d")]).isEmpty)
    }

    @Test("push.badge is a count or an int field: an unknown field, another type or a negative count names the key")
    func badgeSources() throws {
        let file = "kinds/message.received.yaml"
        let unknown = try only([file: replacing("badge: unreadCount", "badge: unread")])
        #expect(unknown?.file == file && unknown?.key == "push.badge")
        #expect(unknown?.message.contains("'unread' is not a declared field") == true)
        let string = try only([file: replacing("badge: unreadCount", "badge: chatId")])
        #expect(string?.key == "push.badge")
        #expect(string?.message.contains("field 'chatId' is string, not int") == true)
        for count in ["-1", "2147483648"] {
            let found = try only([file: replacing("badge: unreadCount", "badge: \(count)")])
            #expect(found?.key == "push.badge", "\(count)")
            #expect(found?.message.contains("2147483647") == true)
        }
        // A broken field is reported once, under its own key, not again as the badge's.
        let broken = try only([
            file: replacing("type: int, path: data.unreadCount", "type: integer, path: data.unreadCount")
        ])
        #expect(broken?.key == "fields.unreadCount.type")
        let directory = try brokenCatalog([
            file: replacing("badge: unreadCount", "badge: 0"),
            "kinds/order.confirmed.yaml": replacing("  priority: high\n", "  priority: high\n  badge: 1\n"),
        ])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (catalog, warnings) = try CatalogLoader.load(directory: directory)
        #expect(warnings.isEmpty, "\(warnings)")
        #expect(catalog.kind(named: "message.received")?.presentation.badge == .constant(0))
        #expect(catalog.kind(named: "order.confirmed")?.presentation.badge == .constant(1))
        #expect(catalog.kind(named: "payment.received")?.presentation.badge == nil)
    }

    @Test("a silent push needs no title or body and refuses what a phone would show; others need both")
    func silentKinds() throws {
        // The example account.synced is silent.
        let file = "kinds/account.synced.yaml"
        let (catalog, warnings) = try CatalogLoader.load(directory: exampleCatalog)
        #expect(warnings.isEmpty, "\(warnings)")
        let kind = try #require(catalog.kind(named: "account.synced"))
        #expect(kind.presentation.silent && kind.presentation.title.isEmpty && kind.presentation.body.isEmpty)
        #expect(kind.presentation.priority == "normal", "a silent kind's default priority")
        let urgent = try brokenCatalog([file: replacing("  ttl: 3600\n", "  ttl: 3600\n  priority: high\n")])
        defer { try? FileManager.default.removeItem(atPath: urgent) }
        #expect(
            try CatalogLoader.load(directory: urgent).catalog.kind(named: "account.synced")?.presentation.priority
                == "high"
        )
        #expect(catalog.kind(named: "order.confirmed")?.presentation.silent == false)
        for (added, key) in [
            ("  title: order.confirmed.title\n", "push.title"), ("  sound: default\n", "push.sound"),
            ("  badge: 1\n", "push.badge"), ("  androidChannel: transactional\n", "push.androidChannel"),
        ] {
            let found = try only([file: replacing("  silent: true\n", "  silent: true\n" + added)])
            #expect(found?.key == key)
            #expect(found?.message == "a silent push shows nothing: leave this out")
        }
        let withDigest = try only([file: { $0 + "digest:\n  summary: message.received.digest\n" }])
        #expect(withDigest?.key == "digest")
        let bodiless = try only(["kinds/order.confirmed.yaml": replacing("  body: order.confirmed.body\n", "")])
        #expect(bodiless?.key == "push.body")
        #expect(
            bodiless?.message
                == "is required, unless the push is silent or only sets the badge (push.badge without a title or a body)"
        )
    }

    @Test("a badge with neither a title nor a body only sets the badge; it refuses what else a phone would show")
    func badgeOnlyKinds() throws {
        // The example messages.read is badge-only.
        let file = "kinds/messages.read.yaml"
        let (catalog, warnings) = try CatalogLoader.load(directory: exampleCatalog)
        #expect(warnings.isEmpty, "\(warnings)")
        let kind = try #require(catalog.kind(named: "messages.read"))
        #expect(kind.presentation.badgeOnly && !kind.presentation.silent && !kind.presentation.showsText)
        #expect(kind.presentation.title.isEmpty && kind.presentation.body.isEmpty)
        #expect(kind.presentation.badge == .field(name: "unreadCount", index: 0))
        #expect(kind.presentation.priority == "normal", "a badge-only kind's default priority")
        #expect(catalog.kind(named: "message.received")?.presentation.badgeOnly == false, "a badge beside text")
        for (added, key) in [
            ("  subtitle: order.confirmed.title\n", "push.subtitle"), ("  sound: default\n", "push.sound"),
            ("  threadId: chats\n", "push.threadId"), ("  androidChannel: messages\n", "push.androidChannel"),
            ("  interruptionLevel: passive\n", "push.interruptionLevel"),
        ] {
            let found = try only([file: replacing("  ttl: 86400\n", "  ttl: 86400\n" + added)])
            #expect(found?.key == key)
            #expect(
                found?.message
                    == "a badge-only push (a badge without a title or a body) shows nothing else: leave this out"
            )
        }
        let withDigest = try only([file: { $0 + "digest:\n  summary: message.received.digest\n" }])
        #expect(withDigest?.key == "digest")
        #expect(withDigest?.message == "a badge-only push has no text to sum up a digest in: leave this out")
        // Without the count in every event there would be pushes that change nothing.
        let optional = try only([
            file: replacing(
                "{ type: int, path: data.unreadCount }",
                "{ type: int, path: data.unreadCount, required: false }"
            )
        ])
        #expect(optional?.key == "push.badge")
        #expect(
            optional?.message == "a badge-only push needs its count in every event: make field 'unreadCount' required"
        )
        // A title without a body is a visible push missing its body, not a badge-only one.
        let titled = try only([file: replacing("  ttl: 86400\n", "  ttl: 86400\n  title: order.confirmed.title\n")])
        #expect(titled?.key == "push.body")
        // Neither text nor badge: still a visible push without its text.
        let empty = try diagnostics([file: replacing("  badge: unreadCount\n", "")])
        #expect(empty.map(\.key) == ["push.title", "push.body"])
    }

    @Test("push.image names a declared url field")
    func imageSources() throws {
        let file = "kinds/promo.offer.yaml"
        let unknown = try only([file: replacing("image: imageUrl", "image: picture")])
        #expect(unknown?.file == file && unknown?.key == "push.image")
        #expect(unknown?.message == "'picture' is not a declared field")
        let string = try only([file: replacing("image: imageUrl", "image: headline")])
        #expect(string?.key == "push.image")
        #expect(string?.message == "field 'headline' is string, not url")
    }

    @Test("a misspelt or unknown key is an error naming its path and the key it most likely meant")
    func unknownKeys() throws {
        // An optional key misspelt was skipped by decoding: the alert went out as an ordinary one.
        let level = try only([
            "kinds/security.login.yaml": replacing(
                "interruptionLevel: time-sensitive",
                "interuptionLevel: time-sensitive"
            )
        ])
        #expect(level?.file == "kinds/security.login.yaml")
        #expect(level?.key == "push.interuptionLevel")
        #expect(level?.message == "unknown key; did you mean 'interruptionLevel'?")
        let top = try only(["kinds/order.confirmed.yaml": replacing("deepLink: ", "deeplink: ")])
        #expect(top?.key == "deeplink")
        #expect(top?.message == "unknown key; did you mean 'deepLink'?")
        // (The field is then required, which the other checks may report as well.)
        let field = try diagnostics([
            "kinds/order.confirmed.yaml": replacing(
                "deliveryNote: { type: string, path: data.deliveryNote, required: false }",
                "deliveryNote: { type: string, path: data.deliveryNote, optional: true }"
            )
        ]).first { $0.key == "fields.deliveryNote.optional" }
        #expect(field?.message.hasPrefix("unknown key; known here: path, required, style, type, values") == true)
        // The rule then lacks its required overLimit, which decoding reports too.
        let throttle = try diagnostics([
            "catalog.yaml": replacing(
                "{ limit: 2, window: 7d, overLimit: drop }",
                "{ limit: 2, window: 7d, overlimit: drop }"
            )
        ])
        let misspelt = throttle.first { $0.key == "policies.marketing.throttle[0].overlimit" }
        #expect(misspelt?.file == "catalog.yaml", "\(throttle)")
        #expect(misspelt?.message == "unknown key; did you mean 'overLimit'?")
        let app = try diagnostics(["catalog.yaml": replacing("    scheme: drop", "    schema: drop")])
        #expect(app.map(\.key).contains("apps.drop.schema"), "\(app)")
        #expect(app.first { $0.key == "apps.drop.schema" }?.message == "unknown key; did you mean 'scheme'?")
        // A YAML merge key brings its mapping's keys in: checked as if written in place.
        let merged = try diagnostics([
            "catalog.yaml": replacing(
                "  marketing:\n    enabledByDefault: false\n",
                "  marketing:\n    <<: { enabledByDefault: false, alwaysDelivred: false }\n"
            )
        ])
        #expect(merged.map(\.key) == ["policies.marketing.alwaysDelivred"], "\(merged)")
        #expect(merged.first?.message == "unknown key; did you mean 'alwaysDelivered'?")
        // A key that resembles none is listed with the keys known there.
        let unrelated = try only(["kinds/promo.offer.yaml": replacing("push:\n", "push:\n  vibrate: true\n")])
        #expect(unrelated?.key == "push.vibrate")
        #expect(unrelated?.message.hasPrefix("unknown key; known here: androidChannel, badge, body") == true)
    }

    @Test("a missing required key in a kind names it")
    func missingKey() throws {
        let found = try only(["kinds/promo.offer.yaml": replacing("category: marketing\n", "")])
        #expect(found?.file == "kinds/promo.offer.yaml")
        #expect(found?.key == "category")
        #expect(found?.message == "is required")
    }

    @Test("a select case that is not a value of the enum field")
    func unknownEnumCase() throws {
        let found = try only([
            "messages/en.json": replacing(
                "card_declined {the card was declined}",
                "card_refused {the card was declined}"
            )
        ])
        #expect(found?.file == "messages/en.json")
        #expect(found?.key == "payment.failed.body")
        #expect(found?.message.contains("'reason' has no value 'card_refused'") == true)
    }

    @Test("a datetime written as {field, date} instead of {field}")
    func dateArgument() throws {
        let found = try only(["messages/de.json": replacing("angemeldet ({at})", "angemeldet ({at, date, short})")])
        #expect(found?.key == "security.login.body")
        #expect(found?.message.contains("write {at}") == true)
    }
}
