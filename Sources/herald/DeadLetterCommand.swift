import ArgumentParser
import Foundation
import HeraldApp
import HeraldEvents
import HeraldKafka

struct DeadLetterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "Inspect dead-letter topics and re-drive dead letters to their original topics.",
        subcommands: [List.self, Show.self, Redrive.self]
    )

    struct Selection: ParsableArguments {
        @Option(help: "Kafka bootstrap servers, comma-separated. Env: HERALD_KAFKA_BOOTSTRAP_SERVERS.")
        var bootstrap: String?

        @Option(help: "The dead-letter topic: herald.events.dlq (the worker's) or herald.outbound.dlq (the sender's).")
        var topic: String

        @Option(help: "Only dead letters with this error code (herald.error.code), such as apns.BadDeviceToken.")
        var code: String?

        @Option(help: "Only dead letters that last failed at or after this RFC 3339 time.")
        var since: String?

        func validate() throws {
            if let since, Timestamp(rfc3339: since) == nil {
                throw ValidationError("--since: expected an RFC 3339 time such as 2026-11-22T08:00:00Z, got '\(since)'")
            }
            if servers.isEmpty { throw ValidationError("--bootstrap: name the Kafka brokers") }
        }

        var servers: [String] {
            (bootstrap ?? Environment.value("HERALD_KAFKA_BOOTSTRAP_SERVERS") ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }
        }

        var tool: DeadLetterTool {
            DeadLetterTool(
                bootstrapServers: servers,
                topic: topic,
                code: code,
                since: since.flatMap { Timestamp(rfc3339: $0) }
            )
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One line per dead letter, and counts by code.")
        @OptionGroup var selection: Selection
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let logger = try global.bootstrapLogging(label: "herald.dlq")
            // Printed as read, each partition in offset order: a topic may hold millions.
            var total = 0
            var counts: [String: Int] = [:]
            try await selection.tool.forEach(logger: logger) { letters in
                for letter in letters {
                    print(letter.summary)
                    counts[letter.code, default: 0] += 1
                }
                total += letters.count
            }
            print(
                "\(total) dead letters" + (counts.isEmpty ? "" : ": ")
                    + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            )
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Every header, the key and the value of each dead letter (values hold device tokens: personal data)."
        )
        @OptionGroup var selection: Selection
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let logger = try global.bootstrapLogging(label: "herald.dlq")
            try await selection.tool.forEach(logger: logger) { letters in
                for letter in letters {
                    print("== \(letter.message.topic)[\(letter.message.partition)]@\(letter.message.offset)")
                    for header in letter.message.headers { print("\(header.name): \(header.value?.string ?? "")") }
                    print("key: \(letter.message.key?.string ?? "")")
                    print(letter.message.value?.string ?? "")
                }
            }
        }
    }

    struct Redrive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Produce the chosen dead letters to their original topics (original key, value and headers).",
            discussion: """
                Re-driving does not remove anything from the dead-letter topic. Re-driving the same letters twice \
                is harmless for outbound messages (the sender's delivery ledger skips what was delivered) and for \
                events (the worker's decision ledger keeps their notification ids).
                """
        )
        @OptionGroup var selection: Selection
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let logger = try global.bootstrapLogging(label: "herald.dlq")
            let (matched, counts, truncated) = try await selection.tool.redriveAll(logger: logger)
            let total = counts.values.reduce(0, +)
            print(
                "re-drove \(total) of \(matched) dead letters"
                    + (counts.isEmpty ? "" : ": ")
                    + counts.sorted { $0.key < $1.key }.map { "\($0.value) to \($0.key)" }.joined(separator: ", ")
            )
            if truncated > 0 {
                print(
                    "\(truncated) dead letter(s) not re-driven: their values were cut to fit the dead-letter topic "
                        + "(herald.value.truncated); the originals are at their herald.original.topic and offset"
                )
            }
        }
    }
}
