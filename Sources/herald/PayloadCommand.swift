import ArgumentParser
import Foundation
import HeraldApp

struct PayloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "payload",
        abstract: "Show provider requests: NotifyKit FCM mode from stdin, or what one event sends to one device.",
        subcommands: [
            NotifyKitPayloadCommand.self, APNsPayloadCommand.self, FCMPayloadCommand.self, ExpoPayloadCommand.self,
        ]
    )
}

struct NotifyKitPayloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifykit",
        abstract:
            "Read one NotifyKitPayloadInput JSON per line on stdin; write the FCM message or {\"error\": ...} per line.",
        discussion: "The size warning above 3500 bytes goes to standard error."
    )

    @Option(help: "The current time in milliseconds since the epoch (apns-expiration = now + ttl).")
    var nowMs: Int64?

    func run() throws {
        let now = nowMs ?? Int64(Date.now.timeIntervalSince1970 * 1000)
        while let line = readLine() {
            if line.allSatisfy(\.isWhitespace) { continue }
            let (output, warning) = PayloadTool.notifyKitLine(line, nowMilliseconds: now)
            print(output)
            if let warning { printError(warning) }
        }
    }
}

/// The options `herald payload apns|fcm|expo` share.
struct ProviderPayloadOptions: ParsableArguments {
    @Option(help: "A CloudEvents JSON file.")
    var event: String

    @Option(help: "A device JSON file: {\"token\", \"appId\", \"environment\", \"locale\", \"timeZone\", \"userId\"}.")
    var device: String

    @Option(help: "The catalog directory.")
    var catalog = "catalog"

    func show(_ provider: String) throws {
        do {
            print(
                try PayloadTool.show(
                    provider: provider,
                    catalogDirectory: catalog,
                    eventFile: event,
                    deviceFile: device
                )
            )
        } catch {
            printError(error.description)
            throw ExitCode(1)
        }
    }
}

struct APNsPayloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Show the APNs request one event sends to one device."
    )
    @OptionGroup var options: ProviderPayloadOptions
    func run() throws { try options.show("apns") }
}

struct FCMPayloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "Show the FCM HTTP v1 message one event sends to one device."
    )
    @OptionGroup var options: ProviderPayloadOptions
    func run() throws { try options.show("fcm") }
}

struct ExpoPayloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expo",
        abstract: "Show the Expo push message one event sends to one device."
    )
    @OptionGroup var options: ProviderPayloadOptions
    func run() throws { try options.show("expo") }
}
