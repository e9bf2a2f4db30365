import ArgumentParser
import HeraldApp
import HeraldWorker

/// `herald user-hash --config herald.yaml USER…`: the form a user id takes in Herald's logs and in
/// its analytics topics.
struct UserHashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user-hash",
        abstract:
            "Print the hash a user id appears as in the logs and in herald.decisions and herald.deliveries (u: and 12 hex digits).",
        discussion: """
            Uses log.user_hash_key_file (or HERALD_LOG_USER_HASH_KEY) from the configuration and environment, as \
            `herald run` does; without a key, the unkeyed hash. Without user ids on the command line, reads them \
            from standard input, one per line (to join analytics with a list of users: `herald user-hash < ids`).
            """
    )

    @Option(help: "A configuration file (YAML); repeat it to layer files, as for herald run.")
    var config: [String] = []

    @Argument(help: "User ids (none: one per line from standard input).")
    var userIDs: [String] = []

    func run() throws {
        let configuration: HeraldConfiguration
        do {
            configuration = try HeraldConfiguration.load(paths: config, roles: [.worker])
        } catch {
            printError("herald: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        let hash = UserHash(key: configuration.logUserHashKey)
        if !userIDs.isEmpty {
            for userID in userIDs { print("\(hash(userID))\t\(userID)") }
            return
        }
        while let line = readLine(strippingNewline: true) {
            let userID = line.hasSuffix("\r") ? String(line.dropLast()) : line
            guard !userID.isEmpty else { continue }
            print("\(hash(userID))\t\(userID)")
        }
    }
}
