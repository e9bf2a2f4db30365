import Foundation
import HeraldEvents
import HeraldKafka
import HeraldPolicy
import HeraldSender
import HeraldSimulator
import HeraldWorker
import Logging
import ServiceLifecycle
import Synchronization

/// The part of `herald dev` that plays the outside world: it publishes the sample directory and
/// event log, shows each notification the simulator accepts as a phone would display it, keeps
/// the pipeline's counters on screen, and ends the run once everything has settled.
final class DevDriver: Service, Sendable {
    let settings: DevRun
    let directory: [DevRun.LogLine]
    let events: [DevRun.LogLine]
    let bootstrap: [String]
    let worker: Worker
    let sender: Sender
    let simulated: SimulatedProviders
    let devices: [String: DevRun.DeviceLabel]
    let logger: Logger
    let output: @Sendable (String) -> Void
    private let state = Mutex(DevRun.Summary())

    init(
        run settings: DevRun,
        directory: [DevRun.LogLine],
        events: [DevRun.LogLine],
        bootstrap: [String],
        worker: Worker,
        sender: Sender,
        simulated: SimulatedProviders,
        devices: [String: DevRun.DeviceLabel],
        logger: Logger,
        output: @escaping @Sendable (String) -> Void
    ) {
        self.settings = settings
        self.directory = directory
        self.events = events
        self.bootstrap = bootstrap
        self.worker = worker
        self.sender = sender
        self.simulated = simulated
        self.devices = devices
        self.logger = logger
        self.output = output
    }

    var summary: DevRun.Summary { state.withLock { $0 } }

    func run() async throws {
        var configuration = KafkaProducerConfiguration()
        configuration.client.bootstrapServers = bootstrap
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        let producing = Task { try await producer.run() }
        do {
            try await drive(producer)
        } catch {
            producer.triggerShutdown()
            _ = try? await producing.value
            throw error
        }
        producer.triggerShutdown()
        try await producing.value
    }

    private func drive(_ producer: KafkaProducer) async throws {
        let started = ContinuousClock.now
        while worker.readiness.assignedPartitions == 0 || sender.assignedPartitions == 0 {
            guard ContinuousClock.now - started < .seconds(60) else {
                throw ConfigurationError("the worker and the sender did not get their partitions within 60 s")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        output("herald dev: embedded broker at \(bootstrap[0]), SQLite, provider simulator, worker and sender running")

        try await publish(directory, with: producer)
        while worker.statistics.handledEvents < directory.count {
            guard ContinuousClock.now - started < settings.timeout else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let changes = worker.statistics.snapshot.directoryChanges
        state.withLock { $0.directoryChanges = changes }
        output(
            "directory: \(changes) change(s) from \(settings.directoryFile); publishing \(events.count) event(s) from \(settings.eventsFile)\n"
        )
        try await publish(events, with: producer)
        state.withLock { $0.published = events.count }

        let expected = directory.count + events.count
        var shown = 0
        var retryScripted = !settings.retryOnceTokens.isEmpty
        var lastLine = ""
        var lastPrinted = ContinuousClock.now
        var settled = false
        while !Task.isShuttingDownGracefully {
            shown = show(from: shown)
            let (workerCounters, senderCounters) = (worker.statistics.snapshot, sender.statistics.snapshot)
            if retryScripted && senderCounters.retriesByStep.values.reduce(0, +) > 0 {
                // The retry was scheduled: the provider is healthy again by the time it comes.
                for token in settings.retryOnceTokens { simulated.simulator.script(token: token, nil) }
                retryScripted = false
            }
            let summary = state.withLock { summary in
                summary.worker = workerCounters
                summary.sender = senderCounters
                summary.notificationsShown = shown
                return summary
            }
            let line = Self.countersLine(summary)
            if line != lastLine && ContinuousClock.now - lastPrinted >= .seconds(1) {
                output(line)
                (lastLine, lastPrinted) = (line, ContinuousClock.now)
            }
            if !settled && workerCounters.handledEvents >= expected && summary.senderSettled >= summary.outbound
                && !retryScripted
            {
                settled = true
                state.withLock { $0.settled = true }
                if line != lastLine { output(line) }
                output(Self.table(summary))
                guard settings.follow else { return }
                output(
                    """

                    following: send your own events, e.g.
                      echo '{"specversion":"1.0","id":"my-1","source":"/orders","type":"order.confirmed","time":"\(WallClock().now())","data":{"userId":"u-1024","orderId":"ord-1","total":{"amount":99,"currency":"NOK"},"itemCount":1}}' \\
                        | kcat -P -b \(bootstrap[0]) -t orders.events -k u-1024
                    Ctrl-C stops.
                    """
                )
            }
            if !settled && ContinuousClock.now - started >= settings.timeout {
                output(line)
                output(
                    "timed out after \(settings.timeout): \(workerCounters.handledEvents) of \(expected) messages handled, "
                        + "\(summary.senderSettled) of \(summary.outbound) provider calls settled"
                )
                output(Self.table(summary))
                return
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    private func publish(_ lines: [DevRun.LogLine], with producer: KafkaProducer) async throws {
        let records = lines.map { line in
            KafkaProducerRecord(topic: line.topic, key: line.key.map { KafkaBytes($0) }, value: KafkaBytes(line.value))
        }
        if let failure = try await producer.enqueue(records).failures().first { throw failure.error }
    }

    /// Prints the deliveries after the first `shown`; returns how many have been shown.
    private func show(from shown: Int) -> Int {
        let deliveries = simulated.simulator.deliveries
        guard deliveries.count > shown else { return shown }
        for delivery in deliveries[shown...] {
            let device = devices[delivery.token]
            let display = Self.display(delivery)
            var lines = [
                "▸ \(delivery.provider.rawValue) · \(device?.deviceID ?? "unknown device") (\(device?.platform ?? "?"), \(device?.locale ?? "?")) · \(device?.app ?? "?")"
            ]
            if display.silent {
                lines.append("    (silent: data for the app, nothing shown)")
            } else if display.badgeOnly {
                lines.append("    (badge only: no text, no sound)")
            }
            if let title = display.title { lines.append("    \(title)") }
            if let body = display.body { lines.append("    \(body)") }
            if let link = display.deepLink { lines.append("    ↳ \(link)") }
            if let image = display.image { lines.append("    image \(image)") }
            if let badge = display.badge { lines.append("    badge \(badge)") }
            output(lines.joined(separator: "\n"))
        }
        return deliveries.count
    }

    /// Title, body, deep link, image and badge as the provider's payload carries them.
    static func display(_ delivery: SimulatorDelivery) -> DisplayedText {
        guard let bytes = delivery.body, let payload = try? JSONParser().parse(bytes) else {
            return DisplayedText(title: nil, body: nil, deepLink: nil)
        }
        return DisplayedText(provider: delivery.provider.rawValue, payload: payload)
    }

    static func countersLine(_ summary: DevRun.Summary) -> String {
        let events: Int = summary.worker.deadLettersByCode.values.reduce(0, +)
        let calls: Int = summary.sender.deadLettersByCode.values.reduce(0, +)
        let deadLettered = events + calls
        return "[consumed \(summary.worker.handledEvents)] sent \(summary.delivered) · "
            + "throttled \(summary.decisions("throttled.dropped")) · digested \(summary.decisions("throttled.digested")) · "
            + "deferred \(summary.decisions("deferred")) · dead-lettered \(deadLettered) · retried \(summary.retried)"
    }

    static func table(_ summary: DevRun.Summary) -> String {
        func counts(_ values: [String: Int]) -> String {
            values.isEmpty
                ? ""
                : "  (" + values.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                    + ")"
        }
        let worker = summary.worker
        let rows: [(String, Int, String)] = [
            ("events published", summary.published, ""),
            ("directory changes", summary.directoryChanges, ""),
            ("decisions", worker.decisionsByReason.values.reduce(0, +), counts(worker.decisionsByReason)),
            ("provider calls built", summary.outbound, counts(worker.outboundByProvider)),
            ("delivered", summary.delivered, ""),
            ("retried", summary.retried, ""),
            ("skipped as duplicates", summary.sender.skippedAlreadyDelivered, ""),
            ("tokens invalidated", summary.sender.tokensInvalidated, ""),
            ("events dead-lettered", worker.deadLettersByCode.values.reduce(0, +), counts(worker.deadLettersByCode)),
            (
                "calls dead-lettered", summary.sender.deadLettersByCode.values.reduce(0, +),
                counts(summary.sender.deadLettersByCode)
            ),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        return "\nsummary\n"
            + rows.map { name, value, detail in
                "  " + name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                    + String(repeating: " ", count: max(0, 5 - String(value).count)) + "\(value)\(detail)"
            }.joined(separator: "\n")
    }
}
