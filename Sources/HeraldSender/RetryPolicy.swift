import HeraldEvents

/// Where a failed call waits before it is tried again: `herald.outbound.retry.1` … `.N`, each with
/// its delay, plus up to `jitter` of it at random so that a burst of failures does not come back as
/// a burst. A provider's `Retry-After` wins when it asks for longer.
public struct RetryPolicy: Sendable, Equatable {
    public var topics: [String]
    public var delays: [Duration]
    /// A fraction of the delay: 0.1 waits between 100% and 110% of it.
    public var jitter: Double

    public static let defaultDelays: [Duration] = [.seconds(10), .seconds(60), .seconds(600), .seconds(3600)]

    public init(
        topicPrefix: String = "herald.outbound.retry",
        delays: [Duration] = RetryPolicy.defaultDelays,
        jitter: Double = 0.1
    ) {
        self.topics = delays.indices.map { "\(topicPrefix).\($0 + 1)" }
        self.delays = delays
        self.jitter = jitter
    }

    /// The retry step a record of `topic` is at: 0 for the outbound topic, n for retry topic n.
    public func step(of topic: String) -> Int { (topics.firstIndex(of: topic) ?? -1) + 1 }

    /// Where a message at `step` goes after a retryable failure, and when it may be tried; `nil`
    /// when the retries are used up.
    public func next(
        after step: Int,
        now: Timestamp,
        retryAfter: Duration?,
        random: Double
    ) -> (topic: String, notBefore: Timestamp)? {
        guard step < topics.count else { return nil }
        let delay = delays[step].milliseconds
        let jittered = delay + Int64(Double(delay) * jitter * min(max(random, 0), 1))
        let wait = max(jittered, retryAfter?.milliseconds ?? 0)
        return (topics[step], Timestamp(epochMilliseconds: now.epochMilliseconds + wait))
    }
}
