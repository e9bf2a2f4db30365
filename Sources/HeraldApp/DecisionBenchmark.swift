import Foundation
import HeraldEvents
import HeraldPolicy
import HeraldStore
import Logging

/// `herald bench decisions`: the worker's decision step against a directory of `devices` devices,
/// batch by batch as the worker runs it after a poll — one recipients lookup for the batch, the
/// policy's plan for each (event, recipient) pair, and one `decide` call for the batch.
///
/// The directory is seeded first (two devices per user) through the same `apply` path a
/// `herald.directory` consumer uses. Events pick users uniformly at random with a fixed seed: 80%
/// messages, 15% transactional, 5% marketing; a tenth of the users have quiet hours or opt-outs.
public struct DecisionBenchmark: Sendable {
    public var devices = 1_000_000
    /// Decisions per round.
    public var decisions = 200_000
    public var batchSize = 500
    public var rounds = 3
    /// Event ids as UUIDv4 (random, so each ledger insert lands on a random page) rather than
    /// sequential numbers (which sort as UUIDv7 or ULIDs do, so inserts land near the ledger's end).
    public var randomEventIDs = false

    public init() {}

    public struct Report: Sendable {
        public var store: String
        public var devices: Int
        public var decisions: Int
        public var batchSize: Int
        public var seedSeconds: Double
        public var roundSeconds: [Double]
        /// Process CPU time per round (user + system), to show how many cores a round kept busy.
        public var roundCPUSeconds: [Double]
        public var reasons: [String: Int]
        /// Where the time went, over all rounds: seconds in the recipients lookup, in the policy's
        /// plans, and in `decide`.
        public var lookupSeconds: Double
        public var planSeconds: Double
        public var decideSeconds: Double
        /// Each `decide` call's duration, in seconds, shortest first: how long a batch waits for its
        /// decisions.
        public var decideCallSeconds: [Double]

        /// The `decide` calls' duration at `fraction` (0.5: the median; 1: the slowest), by nearest
        /// rank: the shortest that at least that fraction of the calls took no longer than.
        public func decideCall(percentile fraction: Double) -> Double {
            guard !decideCallSeconds.isEmpty else { return 0 }
            let rank = Int((fraction * Double(decideCallSeconds.count)).rounded(.up))
            return decideCallSeconds[min(max(rank, 1), decideCallSeconds.count) - 1]
        }

        public var roundRates: [Double] { roundSeconds.map { Double(decisions) / $0 } }
        public var medianDecisionsPerSecond: Double {
            let sorted = roundRates.sorted()
            return sorted[sorted.count / 2]
        }
    }

    /// One (event, recipient) pair to decide.
    struct Pair {
        var user: String
        var event: String
        var eventTime: Timestamp
        var category: String
        var kind: String
        var payload: String
    }

    /// A version 4 UUID's text made of two random words.
    static func uuid(_ high: UInt64, _ low: UInt64) -> String {
        let high = high & 0xFFFF_FFFF_FFFF_0FFF | 0x4000
        let low = low & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        func hex(_ value: UInt64, _ digits: Int) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: digits - text.count) + text
        }
        return "\(hex(high >> 32, 8))-\(hex(high >> 16 & 0xFFFF, 4))-\(hex(high & 0xFFFF, 4))-"
            + "\(hex(low >> 48, 4))-\(hex(low & 0xFFFF_FFFF_FFFF, 12))"
    }

    public func run(store: any StateStore, storeName: String, log: (String) -> Void) async throws -> Report {
        let users = max(devices / 2, 1)
        let seeded = ContinuousClock.now
        let registeredAt = Timestamp(epochMilliseconds: 1_763_000_000_000)
        var changes: [DirectoryEvent] = []
        changes.reserveCapacity(5000)
        for user in 0..<users {
            let userID = "user-\(user)"
            for device in 0..<(user < devices - users ? 2 : 1) {
                changes.append(
                    .deviceRegistered(
                        DeviceRegistration(
                            userID: userID,
                            deviceID: "device-\(device)",
                            platform: device == 0 ? "ios" : "android",
                            provider: device == 0 ? .apns : .fcm,
                            token: "token-\(user)-\(device)-0123456789abcdef0123456789abcdef",
                            appID: "no.getdrop.app",
                            sandbox: false,
                            locale: nil,
                            at: registeredAt
                        )
                    )
                )
            }
            if user % 10 == 0 {
                changes.append(
                    .profileUpdated(userID: userID, locale: "nb-NO", timeZone: "Europe/Oslo", at: registeredAt)
                )
                changes.append(
                    .preferencesUpdated(
                        userID: userID,
                        preferences: Preferences(
                            categories: ["marketing": user % 20 == 0],
                            quietHours: QuietHours(start: "22:00", end: "07:00", timeZone: "Europe/Oslo")
                        ),
                        at: registeredAt
                    )
                )
            }
            if changes.count >= 5000 {
                try await store.apply(changes)
                changes.removeAll(keepingCapacity: true)
            }
            if user > 0 && user % 100_000 == 0 { log("seeded \(user) of \(users) users") }
        }
        if !changes.isEmpty { try await store.apply(changes) }
        try await store.analyze()
        let seedSeconds = (ContinuousClock.now - seeded).inSeconds
        log("seeded \(devices) devices in \(String(format: "%.1f", seedSeconds)) s")

        let policy = Policy.defaults
        // The same pairs on every run.
        var generator = SeededRandom(seed: 42)
        var roundSeconds: [Double] = []
        var roundCPU: [Double] = []
        var reasons: [String: Int] = [:]
        var eventNumber = 0
        var lookup = Duration.zero
        var planning = Duration.zero
        var deciding = Duration.zero
        var decideCalls: [Double] = []
        // Noon UTC on a weekday: most users are outside quiet hours; later rounds move on an hour so
        // message windows do not simply fill up.
        var now = Timestamp(epochMilliseconds: 1_763_726_400_000)
        for round in 0..<rounds {
            // The round's events are made before its clock starts, as a worker's arrive decoded:
            // formatting ids and payloads is the benchmark's work, not the decision step's (it was a
            // tenth of a round's time).
            var batches: [[Pair]] = []
            var generated = 0
            while generated < decisions {
                let count = min(batchSize, decisions - generated)
                var pairs: [Pair] = []
                pairs.reserveCapacity(count)
                for _ in 0..<count {
                    let random = generator.next()
                    let mix = (random >> 32) % 100
                    let (category, kind) =
                        mix < 80
                        ? ("messages", "message.received")
                        : mix < 95 ? ("transactional", "order.confirmed") : ("marketing", "promo.offer")
                    eventNumber += 1
                    let event = randomEventIDs ? Self.uuid(generator.next(), generator.next()) : "event-\(eventNumber)"
                    pairs.append(
                        Pair(
                            user: "user-\(Int(random % UInt64(users)))",
                            event: event,
                            // Events occurred just before the round's clock, 50 to a millisecond.
                            eventTime: Timestamp(
                                epochMilliseconds: now.epochMilliseconds - 60_000 + Int64(generated + pairs.count) / 50
                            ),
                            category: category,
                            kind: kind,
                            payload: #"{"id":"\#(event)"}"#
                        )
                    )
                }
                batches.append(pairs)
                generated += count
            }
            let cpuBefore = ProcessUsage.cpuSeconds()
            let started = ContinuousClock.now
            for pairs in batches {
                let count = pairs.count
                let lookupStarted = ContinuousClock.now
                // In order, as the worker looks its batches up.
                let recipients = try await store.recipients(inOrder: pairs.map(\.user))
                let planStarted = ContinuousClock.now
                lookup += planStarted - lookupStarted
                var requests: [DecisionRequest] = []
                requests.reserveCapacity(count)
                for (pair, recipient) in zip(pairs, recipients) {
                    let input = Policy.Input(
                        kind: pair.kind,
                        category: pair.category,
                        recipient: pair.user,
                        deviceCount: recipient?.devices.count ?? 0,
                        preferences: recipient?.preferences ?? Preferences()
                    )
                    requests.append(
                        DecisionRequest(
                            key: DecisionKey(
                                eventID: pair.event,
                                kind: pair.kind,
                                recipient: pair.user,
                                eventTime: pair.eventTime
                            ),
                            plan: policy.plan(input, now: now),
                            decidedAt: now,
                            payload: pair.payload
                        )
                    )
                }
                let decideStarted = ContinuousClock.now
                planning += decideStarted - planStarted
                for decision in try await store.decide(requests) { reasons[decision.label.rawValue, default: 0] += 1 }
                let decided = ContinuousClock.now - decideStarted
                deciding += decided
                decideCalls.append(decided.inSeconds)
            }
            roundSeconds.append((ContinuousClock.now - started).inSeconds)
            roundCPU.append(ProcessUsage.cpuSeconds() - cpuBefore)
            log(
                "round \(round + 1): \(Int(Double(decisions) / roundSeconds.last!)) decisions/s, "
                    + "CPU \(String(format: "%.2f", roundCPU.last!)) s in \(String(format: "%.2f", roundSeconds.last!)) s"
            )
            now = Timestamp(epochMilliseconds: now.epochMilliseconds + 3_600_000)
        }
        return Report(
            store: storeName,
            devices: devices,
            decisions: decisions,
            batchSize: batchSize,
            seedSeconds: seedSeconds,
            roundSeconds: roundSeconds,
            roundCPUSeconds: roundCPU,
            reasons: reasons,
            lookupSeconds: lookup.inSeconds,
            planSeconds: planning.inSeconds,
            decideSeconds: deciding.inSeconds,
            decideCallSeconds: decideCalls.sorted()
        )
    }
}
