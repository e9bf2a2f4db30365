import HeraldEvents
import HeraldProviders

/// `herald bench payload`: APNs and FCM request builds per second on one thread, for a typical
/// `order.confirmed` notification, in rounds (median reported).
public struct PayloadBenchmark: Sendable {
    /// Builds per round and provider. Default 500,000.
    public var builds = 500_000
    /// Rounds. Default 5.
    public var rounds = 5

    public init() {}

    public struct Report: Sendable {
        public var apnsRates: [Double]
        public var fcmRates: [Double]

        static func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1
                ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        public var apnsMedian: Double { Self.median(apnsRates) }
        public var fcmMedian: Double { Self.median(fcmRates) }
    }

    public func run() throws -> Report {
        let message = PushMessage(
            notificationID: "8c1f0d2e-order.confirmed-u-1024-device-1",
            kind: "order.confirmed",
            title: "Bestilling bekreftet",
            body: "Bestillingen ord-7f3a på 1 234,50 kr (3 varer) er bekreftet. Merknad: Leave at the door",
            deepLink: "https://getdrop.no/orders/ord-7f3a",
            data: [
                .init("notificationType", "order.confirmed"), .init("eventId", "evt-order-1001"),
                .init("deepLinkPath", "/orders/ord-7f3a"), .init("timestamp", "2026-11-21T12:30:00.000Z"),
                .init("orderId", "ord-7f3a"), .init("version", "1"),
            ],
            threadID: "orders",
            category: "ORDER",
            sound: "default",
            interruptionLevel: "active",
            collapseKey: "order-ord-7f3a",
            androidChannel: "transactional",
            timeToLive: 86400,
            createdAt: Timestamp(epochMilliseconds: 1_795_257_000_000)
        )
        let apnsDevice = Device(token: String(repeating: "a1b2c3d4", count: 8), appID: "no.getdrop.app")
        let fcmDevice = Device(
            token: "dGVzdC1mY20tdG9rZW4:APA91bH" + String(repeating: "x", count: 120),
            appID: "no.getdrop.app"
        )
        var checksum = 0
        func rate(_ body: () throws -> Int) rethrows -> Double {
            let start = ContinuousClock.now
            for _ in 0..<builds { checksum &+= try body() }
            return Double(builds) / start.duration(to: .now).inSeconds
        }
        var apns: [Double] = []
        var fcm: [Double] = []
        for _ in 0..<max(rounds, 1) {
            apns.append(try rate { try APNsPayloadBuilder.build(message, for: apnsDevice).body.count })
            fcm.append(try rate { try FCMPayloadBuilder.build(message, for: fcmDevice).count })
        }
        precondition(checksum > 0)
        return Report(apnsRates: apns, fcmRates: fcm)
    }
}
