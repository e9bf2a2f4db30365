import HeraldPolicy
import HeraldWorker

/// The configured provider clients; a message for a provider without one is a configuration error.
public struct ProviderClients: Sendable {
    public var apns: APNsClient?
    public var fcm: FCMClient?
    public var expo: ExpoClient?

    public init(apns: APNsClient? = nil, fcm: FCMClient? = nil, expo: ExpoClient? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.expo = expo
    }

    /// One call's outcome and how long it took. (A struct rather than a tuple: arrays of tuples
    /// are copied and destroyed through runtime type metadata, a lookup on every call.)
    struct Call: Sendable {
        var outcome: DeliveryOutcome
        var seconds: Double

        /// What a call's slot holds until its answer is in: were one ever left over, its message
        /// would be retried, never taken as delivered.
        static let unanswered = Call(
            outcome: Classification.transport("connection", "the call was not made"),
            seconds: 0
        )
    }

    /// Sends `messages`, all of one provider, concurrently (each client limits its own
    /// concurrency): an outcome and the call's seconds for each, in order.
    func send(_ messages: [OutboundMessage], provider: PushProvider) async -> [Call] {
        func missing() -> [Call] {
            let outcome = DeliveryOutcome.configuration(
                .init("\(provider.rawValue).not_configured", "no \(provider.rawValue) credentials are configured")
            )
            return Array(repeating: Call(outcome: outcome, seconds: 0), count: messages.count)
        }
        switch provider {
        case .expo:
            guard let expo else { return missing() }
            let started = ContinuousClock.now
            let outcomes = await expo.send(messages)
            let seconds = (ContinuousClock.now - started).seconds
            return outcomes.map { Call(outcome: $0, seconds: seconds) }
        case .apns:
            guard let apns else { return missing() }
            return await apns.send(messages)
        case .fcm:
            guard let fcm else { return missing() }
            return await Self.eachConcurrently(messages) { await fcm.send($0) }
        }
    }

    /// Calls `send` for each message concurrently (the client limits its own concurrency): an
    /// outcome and the call's seconds for each, in order.
    static func eachConcurrently(
        _ messages: [OutboundMessage],
        _ send: @escaping @Sendable (OutboundMessage) async -> DeliveryOutcome
    ) async -> [Call] {
        struct Indexed: Sendable {
            var index: Int
            var call: Call
        }
        return await withTaskGroup(of: Indexed.self) { group in
            for (index, message) in messages.enumerated() {
                group.addTask {
                    let started = ContinuousClock.now
                    let outcome = await send(message)
                    return Indexed(
                        index: index,
                        call: Call(outcome: outcome, seconds: (ContinuousClock.now - started).seconds)
                    )
                }
            }
            var calls = [Call](repeating: .unanswered, count: messages.count)
            for await answered in group { calls[answered.index] = answered.call }
            return calls
        }
    }

    public func shutdown() async {
        await apns?.shutdown()
        await fcm?.shutdown()
        await expo?.shutdown()
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
