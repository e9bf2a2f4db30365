import Foundation
import HeraldEvents
import Testing

@testable import HeraldPolicy

func at(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }

@Suite("Policy decisions")
struct PolicyTests {
    let policy = Policy.defaults
    let noon = at("2026-11-21T12:00:00Z")

    func input(
        _ category: String,
        kind: String = "k",
        devices: Int = 1,
        preferences: Preferences = Preferences(),
        expiresAt: Timestamp? = nil
    ) -> Policy.Input {
        Policy.Input(
            kind: kind,
            category: category,
            recipient: "u-1",
            deviceCount: devices,
            preferences: preferences,
            expiresAt: expiresAt
        )
    }

    @Test("sent: on by default, counted against the category's throttle window")
    func sent() {
        let outcome = policy.decide(input("messages"), counts: [:], now: noon)
        #expect(outcome.reason == .sent)
        #expect(outcome.effects == [.count(ThrottleKey(recipient: "u-1", rule: "messages", windowStart: noon))])
        #expect(policy.decide(input("transactional"), counts: [:], now: noon) == PolicyOutcome(.sent))
    }

    @Test("suppressed.preference: the master switch, an opt-out, and marketing without an opt-in")
    func preferences() {
        #expect(
            policy.decide(input("transactional", preferences: Preferences(pushEnabled: false)), counts: [:], now: noon)
                .reason == .suppressedPreference
        )
        #expect(
            policy.decide(
                input("messages", preferences: Preferences(categories: ["messages": false])),
                counts: [:],
                now: noon
            ).reason == .suppressedPreference
        )
        #expect(policy.decide(input("marketing"), counts: [:], now: noon).reason == .suppressedPreference)
        #expect(
            policy.decide(
                input("marketing", preferences: Preferences(categories: ["marketing": true])),
                counts: [:],
                now: noon
            ).reason == .sent
        )
    }

    @Test("security is always delivered: opt-outs, the master switch and quiet hours do not apply")
    func securityBypass() {
        let everythingOff = Preferences(
            pushEnabled: false,
            categories: ["security": false],
            quietHours: QuietHours(start: "00:00", end: "23:59", timeZone: "Europe/Oslo")
        )
        #expect(policy.decide(input("security", preferences: everythingOff), counts: [:], now: noon).reason == .sent)
    }

    @Test("quiet hours: transactional is deferred to their end, marketing is dropped")
    func quietHours() {
        let night = Preferences(
            categories: ["marketing": true],
            quietHours: QuietHours(start: "22:00", end: "08:00", timeZone: "Europe/Oslo")
        )
        let late = at("2026-11-21T22:30:00Z")  // 23:30 in Oslo
        let deferred = policy.decide(input("transactional", preferences: night), counts: [:], now: late)
        #expect(deferred.reason == .deferredQuietHours)
        #expect(deferred.dueAt == at("2026-11-22T07:00:00Z"))  // 08:00 CET
        #expect(deferred.effects == [.schedule(at: at("2026-11-22T07:00:00Z"))])
        #expect(
            policy.decide(input("marketing", preferences: night), counts: [:], now: late).reason
                == .suppressedQuietHours
        )
        #expect(policy.decide(input("transactional", preferences: night), counts: [:], now: noon).reason == .sent)
        // A silent push disturbs no one: quiet hours do not hold it back; an opt-out still does.
        var silent = input("transactional", preferences: night)
        silent.silent = true
        #expect(policy.decide(silent, counts: [:], now: late) == PolicyOutcome(.sent))
        var optedOut = night
        optedOut.categories["transactional"] = false
        silent.preferences = optedOut
        #expect(policy.decide(silent, counts: [:], now: late).reason == .suppressedPreference)
    }

    @Test(
        "throttle: the 101st message in an hour is digested at the window's end; marketing's third in a week is dropped"
    )
    func throttle() {
        let messagesKey = policy.throttleKeys(for: input("messages"), now: noon)[0]
        let digested = policy.decide(input("messages"), counts: [messagesKey: 100], now: noon)
        #expect(digested.reason == .throttledDigested)
        // Sent half a minute after the window closes (Policy.digestGrace): late writes make it in.
        #expect(digested.dueAt == at("2026-11-21T13:00:30Z"))
        #expect(digested.effects == [.addToDigest(messagesKey, flushAt: at("2026-11-21T13:00:30Z"))])
        #expect(policy.decide(input("messages"), counts: [messagesKey: 99], now: noon).reason == .sent)

        let optedIn = Preferences(categories: ["marketing": true])
        let marketingKey = policy.throttleKeys(for: input("marketing", preferences: optedIn), now: noon)[0]
        #expect(
            policy.decide(input("marketing", preferences: optedIn), counts: [marketingKey: 1], now: noon).reason
                == .sent
        )
        #expect(
            policy.decide(input("marketing", preferences: optedIn), counts: [marketingKey: 2], now: noon).reason
                == .throttledDropped
        )
    }

    @Test("deferred.throttle, and rules that apply to one kind only")
    func deferredThrottleAndKinds() {
        let custom = Policy(categories: [
            "transactional": CategoryPolicy(throttle: [
                ThrottleRule(name: "receipts", limit: 1, window: .seconds(60), overLimit: .defer, kind: "receipt")
            ])
        ])
        let receiptKey = custom.throttleKeys(for: input("transactional", kind: "receipt"), now: noon)[0]
        let deferred = custom.decide(input("transactional", kind: "receipt"), counts: [receiptKey: 1], now: noon)
        #expect(deferred.reason == .deferredThrottle)
        #expect(deferred.dueAt == at("2026-11-21T12:01:00Z"))
        #expect(custom.throttleKeys(for: input("transactional", kind: "other"), now: noon).isEmpty)
        #expect(
            custom.decide(input("transactional", kind: "other"), counts: [receiptKey: 1], now: noon).reason == .sent
        )
    }

    @Test("a category's policy is found however many categories there are, and after the categories change")
    func categoryLookup() {
        // A name of more than 15 bytes is kept out of line: compared by its bytes, not its bits.
        let names = ["marketing", "account-security-alerts", "marketing-partners"]
        for extra in [0, 20] {
            var categories = Policy.defaults.categories
            for index in 0..<extra { categories["filler-\(index)"] = .security }
            categories["account-security-alerts"] = .security
            categories["marketing-partners"] = .marketing
            var policy = Policy(categories: categories)
            let optedOut = Preferences(categories: ["marketing": false, "marketing-partners": false])
            for name in names {
                #expect(
                    policy.decide(input(name, preferences: optedOut), counts: [:], now: noon).reason
                        == (name == "account-security-alerts" ? .sent : .suppressedPreference),
                    "\(name), \(extra) more"
                )
            }
            // A category the policy does not name is transactional: on, unlimited.
            #expect(policy.decide(input("unheard-of"), counts: [:], now: noon) == PolicyOutcome(.sent))
            policy.categories["unheard-of"] = .marketing
            #expect(policy.decide(input("unheard-of"), counts: [:], now: noon).reason == .suppressedPreference)
            policy.categories["marketing"] = nil
            #expect(
                policy.decide(input("marketing", preferences: optedOut), counts: [:], now: noon).reason
                    == .suppressedPreference
            )
            #expect(policy.decide(input("marketing"), counts: [:], now: noon) == PolicyOutcome(.sent))
        }
    }

    @Test("no_devices and expired (duplicate is the decision ledger's: see the store contract)")
    func otherReasons() {
        #expect(policy.decide(input("messages", devices: 0), counts: [:], now: noon).reason == .noDevices)
        #expect(policy.decide(input("messages", expiresAt: noon), counts: [:], now: noon).reason == .expired)
        #expect(DecisionReason.allCases.count == 11)
    }
}

@Suite("Quiet hours across midnight and DST")
struct QuietHoursTests {
    @Test("a period that wraps midnight contains late evening and early morning, not midday")
    func wrapsMidnight() {
        let quiet = QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")!
        #expect(quiet.contains(at("2026-11-21T21:00:00Z")))  // 22:00 local: start is inclusive
        #expect(quiet.contains(at("2026-11-22T05:59:00Z")))  // 06:59 local
        #expect(!quiet.contains(at("2026-11-22T06:00:00Z")))  // 07:00 local: end is exclusive
        #expect(!quiet.contains(at("2026-11-21T11:00:00Z")))
        #expect(QuietHours(start: "25:00", end: "07:00", timeZone: "Europe/Oslo") == nil)
        #expect(QuietHours(start: "22:00", end: "07:00", timeZone: "Mars/Olympus") == nil)
    }

    @Test("made from minutes after midnight, as a store reads them back: the same period, and the same refusals")
    func fromMinutes() {
        let quiet = QuietHours(startMinute: 22 * 60, endMinute: 7 * 60, timeZone: "Europe/Oslo")
        #expect(quiet == QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo"))
        #expect(quiet?.contains(at("2026-11-21T21:00:00Z")) == true)
        #expect(quiet?.contains(at("2026-11-22T06:00:00Z")) == false)
        #expect(QuietHours(startMinute: 1440, endMinute: 0, timeZone: "Europe/Oslo") == nil)
        #expect(QuietHours(startMinute: -1, endMinute: 0, timeZone: "Europe/Oslo") == nil)
        #expect(QuietHours(startMinute: 60, endMinute: 60, timeZone: "Europe/Oslo") == nil)
        // Zones found by name are kept; a name that is none is refused every time, never kept.
        for _ in 0..<2 {
            #expect(QuietHours(startMinute: 0, endMinute: 60, timeZone: "Mars/Olympus") == nil)
            #expect(
                QuietHours(startMinute: 0, endMinute: 60, timeZone: "Asia/Tokyo")?.contains(at("2026-11-21T15:30:00Z"))
                    == true
            )
        }
    }

    @Test("Oslo: the end of quiet hours keeps its wall time across spring-forward and fall-back")
    func oslo() {
        let quiet = QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")!
        // Midnight before the March change (CET, +1); 07:00 that morning is already CEST (+2).
        #expect(quiet.endsAfter(at("2026-03-28T23:00:00Z")) == at("2026-03-29T05:00:00Z"))
        // Midnight before the October change (CEST, +2); 07:00 that morning is CET (+1).
        #expect(quiet.endsAfter(at("2026-10-24T22:00:00Z")) == at("2026-10-25T06:00:00Z"))
    }

    @Test("New York: an end inside the skipped hour moves to the jump; a repeated hour ends at its first 01:30")
    func newYork() {
        let gap = QuietHours(start: "23:00", end: "02:30", timeZone: "America/New_York")!
        #expect(gap.contains(at("2026-03-08T06:30:00Z")))  // 01:30 EST
        #expect(gap.endsAfter(at("2026-03-08T06:30:00Z")) == at("2026-03-08T07:00:00Z"))  // 03:00 EDT
        let repeated = QuietHours(start: "00:00", end: "01:30", timeZone: "America/New_York")!
        #expect(repeated.contains(at("2026-11-01T05:10:00Z")))  // 01:10 EDT
        #expect(repeated.endsAfter(at("2026-11-01T05:10:00Z")) == at("2026-11-01T05:30:00Z"))  // 01:30 EDT
        #expect(!repeated.contains(at("2026-11-01T06:45:00Z")))  // 01:45 EST, after the end by wall time
    }

    @Test(
        "the local wall time is the calendar's, to the minute: 20,000 seeded moments from 1890 to 2100 in zones with DST, half hours and offsets in seconds"
    )
    func wallTimeMatchesCalendar() {
        // Lord Howe moves by half an hour; Kathmandu is +05:45; Amsterdam kept +00:19:32 until 1937.
        let zones = [
            "Europe/Oslo", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Europe/Amsterdam",
            "Pacific/Chatham", "America/St_Johns", "UTC",
        ]
        var random = SeededRandom(seed: 1_128)
        for index in 0..<20_000 {
            let name = zones[index % zones.count]
            let zone = TimeZone(identifier: name)!
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            // 1890 to 2100, with the milliseconds too: moments before 1970 are negative.
            let milliseconds = Int64.random(in: -2_524_608_000_000...4_102_444_800_000, using: &random)
            let moment = Timestamp(epochMilliseconds: milliseconds)
            let date = Date(timeIntervalSince1970: (Double(milliseconds) / 1000).rounded(.down))
            let parts = calendar.dateComponents([.hour, .minute], from: date)
            let expected = parts.hour! * 60 + parts.minute!
            #expect(QuietHours.minuteOfDay(moment, in: zone) == expected, "\(name) at \(milliseconds)")
            // A period of that one minute holds the moment; one that ends there does not.
            let minute = QuietHours.text(expected)
            let next = QuietHours.text((expected + 1) % 1440)
            let earlier = QuietHours.text((expected + 1380) % 1440)
            #expect(QuietHours(start: minute, end: next, timeZone: name)!.contains(moment))
            #expect(!QuietHours(start: earlier, end: minute, timeZone: name)!.contains(moment))
        }
    }

    @Test("quiet periods are equal by their times and zone, also after the zone is changed")
    func equality() throws {
        let oslo = QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")!
        let newYork = QuietHours(start: "22:00", end: "07:00", timeZone: "America/New_York")!
        #expect(oslo != newYork)
        let changed = try #require(oslo.inTimeZone("America/New_York"))
        #expect(changed == newYork && changed.hashValue == newYork.hashValue)
        // 23:30 in New York, 05:30 in Oslo: the changed period answers for its new zone.
        #expect(changed.contains(at("2026-11-22T04:30:00Z")))
        #expect(!changed.contains(at("2026-11-22T14:30:00Z")))
        #expect(oslo.contains(at("2026-11-22T04:30:00Z")) && oslo.timeZone == "Europe/Oslo")
    }

    @Test("a period cannot be given a zone that does not exist: no value that would fail when asked")
    func unknownZone() {
        let oslo = QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")!
        #expect(oslo.inTimeZone("Europe/Atlantis") == nil)
        #expect(QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Atlantis") == nil)
    }

    @Test("a kept end answers exactly as the calendar search, in any order of moments, across DST changes")
    func keptEnds() {
        let periods = [
            QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")!,
            QuietHours(start: "23:00", end: "02:30", timeZone: "America/New_York")!,
            QuietHours(start: "00:00", end: "01:30", timeZone: "America/New_York")!,
            QuietHours(start: "13:00", end: "14:00", timeZone: "Asia/Kolkata")!,
        ]
        // Every 7 minutes and 13 seconds for four days around each 2026 change, forwards, then
        // backwards, then scrambled (a stride coprime with the count): each order reuses and
        // replaces kept answers differently.
        // The US spring gap, the EU changes, and the US repeated hour (November 1).
        let starts = [
            at("2026-03-07T00:00:00Z"), at("2026-03-28T00:00:00Z"), at("2026-10-24T00:00:00Z"),
            at("2026-10-31T00:00:00Z"),
        ]
        var moments: [Timestamp] = []
        for start in starts {
            for step in 0..<800 {
                moments.append(Timestamp(epochMilliseconds: start.epochMilliseconds + Int64(step) * 433_000))
            }
        }
        let scrambled = moments.indices.map { moments[($0 * 389) % moments.count] }
        for order in [moments, moments.reversed(), scrambled] {
            for moment in order {
                for quiet in periods where quiet.endsAfter(moment) != quiet.searchEnd(after: moment) {
                    Issue.record(
                        "\(quiet) after \(moment): kept \(quiet.endsAfter(moment)), searched \(quiet.searchEnd(after: moment))"
                    )
                }
            }
        }
    }
}
