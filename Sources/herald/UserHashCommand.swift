import ArgumentParser
import HeraldApp
import HeraldWorker

/// `herald user-hash --config herald.yaml USER…`: the form a user id takes in Herald's logs.
struct UserHashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user-hash",
        abstract: "Print the hash a user id appears as in the logs (u: and 12 hex digits), to find a user there.",
        discussion: """
            Uses log.user_hash_key_file (or HERALD_LOG_USER_HASH_KEY) from the configuration and environment, as \
            `herald run` does; without a key, the unkeyed hash.
            """
    )

    @Option(help: "A configuration file (YAML); repeat it to layer files, as for herald run.")
    var config: [String] = []

    @Argument(help: "User ids.")
    var userIDs: [String]

    func run() throws {
        let configuration: HeraldConfiguration
        do {
            configuration = try HeraldConfiguration.load(paths: config, roles: [.worker])
        } catch {
            printError("herald: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        Redact.setKey(configuration.logUserHashKey)
        for userID in userIDs { print("\(Redact.user(userID))\t\(userID)") }
    }
}
