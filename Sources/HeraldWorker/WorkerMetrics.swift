import HeraldKafka

/// The worker's metrics in Prometheus' text exposition format (version 0.0.4).
public enum WorkerMetrics {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Every counter, the latency histogram, and consumer lag per partition.
    public static func exposition(_ counters: WorkerStatistics.Counters, lag: [TopicPartition: Int64]) -> String {
        var text = ""
        func counter(_ name: String, _ help: String, label: String, _ values: [String: Int]) {
            text += family(name, .counter, help)
            for (value, count) in values.sorted(by: { $0.key < $1.key }) {
                text += "\(name){\(label)=\"\(escape(value))\"} \(count)\n"
            }
        }
        counter(
            "herald_events_consumed_total",
            "Events consumed, by CloudEvents type.",
            label: "type",
            counters.eventsByType
        )
        counter(
            "herald_decisions_total",
            "Decisions, by reason code.",
            label: "reason",
            counters.decisionsByReason
        )
        counter(
            "herald_outbound_total",
            "Provider calls produced to the outbound topic, by provider.",
            label: "provider",
            counters.outboundByProvider
        )
        counter(
            "herald_dead_letters_total",
            "Events sent to the events dead-letter topic, by error code.",
            label: "code",
            counters.deadLettersByCode
        )
        for (name, help, value) in [
            (
                "herald_events_ignored_total", "Events of a type no kind handles, ignored by configuration.",
                counters.ignoredEvents
            ),
            ("herald_directory_changes_total", "herald.directory changes applied.", counters.directoryChanges),
            (
                "herald_directory_tombstones_total",
                "herald.directory records without a value (compaction tombstones), skipped.",
                counters.directoryTombstones
            ),
            (
                "herald_devices_left_out_total",
                "Devices a notification did not go to: their recipient has more than worker.max_devices_per_recipient.",
                counters.devicesLeftOut
            ),
            (
                "herald_directory_devices_evicted_total",
                "Devices the directory removed, oldest first, because their user had more than store.max_devices_per_user.",
                counters.devicesEvicted
            ),
            (
                "herald_directory_changes_redated_total",
                "herald.directory changes dated more than 5 minutes ahead of the worker's clock, applied as of it.",
                counters.directoryChangesRedated
            ),
            (
                "herald_devices_skipped_total", "Devices skipped because their token cannot be addressed.",
                counters.skippedDevices
            ),
            (
                "herald_decisions_purged_total", "Decision ledger entries deleted by the retention purge.",
                counters.purgedDecisions
            ),
        ] {
            text += family(name, .counter, help) + "\(name) \(value)\n"
        }
        let histogram = counters.latencies
        let name = "herald_event_processing_seconds"
        text += family(name, .histogram, "From an event's Kafka timestamp to its records being acknowledged.")
        text += histogramLines(name, histogram)
        text += lagLines(lag)
        return text
    }

    /// A metric family's kind, as its `# TYPE` line names it.
    public enum FamilyType: String {
        case counter, gauge, histogram
    }

    /// A metric family's `# HELP` and `# TYPE` lines.
    public static func family(_ name: String, _ type: FamilyType, _ help: String) -> String {
        "# HELP \(name) \(help)\n# TYPE \(name) \(type.rawValue)\n"
    }

    /// A metric family's `# HELP` and `# TYPE` lines, then a sample for each of `samples`: its
    /// labels as written between the braces (values escaped by the caller), and its value.
    public static func family(
        _ name: String,
        _ type: FamilyType,
        _ help: String,
        samples: [(labels: String, value: Int)]
    ) -> String {
        var text = family(name, type, help)
        for (labels, value) in samples { text += "\(name){\(labels)} \(value)\n" }
        return text
    }

    /// `herald_consumer_lag` per partition.
    public static func lagLines(_ lag: [TopicPartition: Int64]) -> String {
        var text = family("herald_consumer_lag", .gauge, "Messages behind the end of each assigned partition.")
        for (partition, behind) in lag.sorted(by: { $0.key < $1.key }) {
            text +=
                "herald_consumer_lag{topic=\"\(escape(partition.topic))\",partition=\"\(partition.partition)\"} \(behind)\n"
        }
        return text
    }

    /// A histogram's `_bucket`, `_sum` and `_count` lines, with `labels` (`a="b"`) on each.
    public static func histogramLines(_ name: String, _ histogram: LatencyHistogram, labels: String = "") -> String {
        let prefix = labels.isEmpty ? "" : labels + ","
        let plain = labels.isEmpty ? "" : "{\(labels)}"
        var text = ""
        var cumulative = 0
        for (index, bound) in LatencyHistogram.bounds.enumerated() {
            cumulative += histogram.buckets[index]
            text += "\(name)_bucket{\(prefix)le=\"\(bound)\"} \(cumulative)\n"
        }
        text += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(histogram.count)\n"
        text += "\(name)_sum\(plain) \(histogram.sum)\n\(name)_count\(plain) \(histogram.count)\n"
        return text
    }

    public static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

extension Worker {
    /// Consumer lag per assigned partition.
    public func lag() -> [TopicPartition: Int64] { consumer.lag() }
}
