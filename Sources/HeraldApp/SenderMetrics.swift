import HeraldPolicy
import HeraldSender
import HeraldWorker

/// The sender's counters in Prometheus' text format.
public enum SenderMetrics {
    public static func exposition(
        _ counters: SenderStatistics.Counters,
        circuits: [PushProvider: CircuitBreaker.State],
        waitingRetries: Int
    ) -> String {
        var text = ""
        func counter(_ name: String, _ help: String, labels: [String], _ values: [String: Int]) {
            text += WorkerMetrics.family(name, .counter, help)
            for (value, count) in values.sorted(by: { $0.key < $1.key }) {
                let parts =
                    labels.count == 1
                    ? [value] : value.split(separator: " ", maxSplits: labels.count - 1).map(String.init)
                let rendered = zip(labels, parts).map { "\($0)=\"\(WorkerMetrics.escape($1))\"" }.joined(separator: ",")
                text += "\(name){\(rendered)} \(count)\n"
            }
        }
        counter(
            "herald_provider_calls_total",
            "Provider calls, by provider and outcome class.",
            labels: ["provider", "outcome"],
            counters.callsByOutcome
        )
        counter(
            "herald_provider_answers_total",
            "Provider answers other than success, by reason code.",
            labels: ["reason"],
            counters.answersByReason
        )
        counter(
            "herald_retries_total",
            "Messages put on a retry topic, by retry step.",
            labels: ["step"],
            counters.retriesByStep
        )
        counter(
            "herald_outbound_dead_letters_total",
            "Messages sent to the outbound dead-letter topic, by error code.",
            labels: ["code"],
            counters.deadLettersByCode
        )
        counter(
            "herald_provider_configuration_errors_total",
            "Provider answers that mean Herald is set up wrong, by code.",
            labels: ["code"],
            counters.configurationErrors
        )
        for (name, help, value) in [
            (
                "herald_tokens_invalidated_total", "device.token.invalidated events produced.",
                counters.tokensInvalidated
            ),
            (
                "herald_sends_skipped_delivered_total",
                "Messages not sent: the delivery ledger had them, or a call for the same notification was out.",
                counters.skippedAlreadyDelivered
            ),
            ("herald_sends_expired_total", "Messages dropped because they expired before sending.", counters.expired),
            (
                "herald_sends_circuit_deferred_total", "Messages put back because their provider's circuit was open.",
                counters.circuitDeferred
            ),
            ("herald_expo_receipts_checked_total", "Expo receipts read.", counters.receiptsChecked),
            (
                "herald_deliveries_purged_total", "Delivery ledger entries deleted by the retention purge.",
                counters.purgedDeliveries
            ),
            (
                "herald_ledger_refusals_total",
                "Delivery ledger look-ups and entries the store refused for what they hold, skipped.",
                counters.ledgerRefusals
            ),
        ] {
            text += WorkerMetrics.family(name, .counter, help) + "\(name) \(value)\n"
        }
        text += WorkerMetrics.family(
            "herald_retries_waiting",
            .gauge,
            "Messages of the retry topics read and held until their time."
        )
        text += "herald_retries_waiting \(waitingRetries)\n"
        text += WorkerMetrics.family(
            "herald_circuit_open",
            .gauge,
            "Whether a provider's circuit is open (1), half-open (0.5) or closed (0)."
        )
        for (provider, state) in circuits.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let value = state == .open ? "1" : state == .halfOpen ? "0.5" : "0"
            text += "herald_circuit_open{provider=\"\(provider.rawValue)\"} \(value)\n"
        }
        text += WorkerMetrics.family("herald_provider_call_seconds", .histogram, "Provider call latency, by provider.")
        for (provider, histogram) in counters.latencies.sorted(by: { $0.key < $1.key }) {
            text += WorkerMetrics.histogramLines(
                "herald_provider_call_seconds",
                histogram,
                labels: "provider=\"\(provider)\""
            )
        }
        return text
    }
}
