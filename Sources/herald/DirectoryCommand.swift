import ArgumentParser
import HeraldApp
import HeraldEvents
import HeraldPolicy
import HeraldStore
import Logging

struct DirectoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "directory",
        abstract: "Maintain the recipient directory.",
        subcommands: [DirectoryImportCommand.self, DirectoryShowCommand.self]
    )
}

/// The store option every command that opens the state store shares.
struct StoreOptions: ParsableArguments {
    @Option(
        help: """
            The state store: sqlite:PATH (or a path; :memory: for none) or postgres://user@host:port/db. \
            Env: HERALD_STORE. Default: sqlite:herald.sqlite.
            """
    )
    var store: String?

    func location() throws -> StoreLocation {
        let text = store ?? Environment.value("HERALD_STORE") ?? "sqlite:herald.sqlite"
        do {
            return try StoreLocation(text)
        } catch {
            throw ValidationError("--store: \(error.message)")
        }
    }
}

struct DirectoryImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Load a JSON Lines snapshot of herald.directory events (one CloudEvent per line).",
        discussion: """
            Lines apply in file order, by each event's time, exactly as the worker applies the topic, so \
            importing a snapshot twice, or one older than the store, changes nothing that is newer. \
            Invalid lines are reported by number and skipped; the exit status is then 1.
            """
    )

    @Argument(help: "The JSON Lines file.")
    var file: String

    @Option(
        help: """
            The most devices kept for one user, as store.max_devices_per_user keeps them for the worker \
            (the most recently registered). Env: HERALD_STORE_MAX_DEVICES_PER_USER. Default: 1000.
            """
    )
    var maxDevicesPerUser: Int?

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = try global.bootstrapLogging(label: "herald.directory")
        let location = try storeOptions.location()
        // A value that is not a number is refused, naming where it came from, rather than left for the default.
        var limit = DirectoryLimits.maximumDevicesPerUser
        var source = "--max-devices-per-user"
        if let maxDevicesPerUser {
            limit = maxDevicesPerUser
        } else if let text = Environment.value("HERALD_STORE_MAX_DEVICES_PER_USER") {
            source = "HERALD_STORE_MAX_DEVICES_PER_USER"
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("\(source): expected a number of devices, got '\(text)'")
            }
            limit = value
        }
        guard (1...1_000_000).contains(limit) else {
            throw ValidationError("\(source): must be from 1 to 1000000")
        }
        let report = try await location.withStore(logger: logger, maximumDevicesPerUser: limit) { store in
            try await DirectoryImport.run(file: file, into: store, now: WallClock().now())
        }
        if report.redated > 0 {
            printError(
                "\(file): \(report.redated) change(s) dated more than 5 minutes after this machine's clock were imported as of now"
            )
        }
        for line in report.rejected { printError("\(file): \(line)") }
        if report.rejectedCount > report.rejected.count {
            printError("\(file): and \(report.rejectedCount - report.rejected.count) more rejected line(s)")
        }
        if report.evicted > 0 {
            printError(
                "\(file): \(report.evicted) device(s) removed, oldest first: their users registered more than \(limit)"
            )
        }
        print("imported \(report.imported) change(s) into \(location); rejected \(report.rejectedCount) line(s)")
        if report.rejectedCount > 0 { throw ExitCode(1) }
    }
}

struct DirectoryShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract:
            "Print what the directory holds for users: devices (tokens shortened), locale, time zone, preferences."
    )

    @Argument(help: "User ids.")
    var users: [String]

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = try global.bootstrapLogging(label: "herald.directory")
        let location = try storeOptions.location()
        let (recipients, deletions) = try await location.withStore(logger: logger) { store in
            (try await store.recipients(users), try await store.deletions(users))
        }
        for user in users {
            print(DirectoryTool.describe(user: user, recipients[OpaqueID(user)], deletedAt: deletions[OpaqueID(user)]))
        }
    }
}
