import Foundation
import HeraldAuth
import HeraldEvents
import HeraldPolicy
import HeraldSimulator
import Logging

/// The provider simulator with credentials made for it: an APNs key and a Firebase service
/// account it trusts, and the authority its certificate comes from. What `herald simulate-providers`,
/// `herald bench sender` and `herald dev` run.
public struct SimulatedProviders: Sendable {
    public let simulator: ProviderSimulator
    public let server: SimulatorServer
    public let apnsKey: APNsSigningKey
    public let apnsKeyPEM: String
    public let serviceAccountJSON: [UInt8]

    public static let keyID = "SIMKEY0001"
    public static let teamID = "SIMTEAM001"
    public static let projectID = "herald-simulated"
    /// The host name senders reach the simulator by, when it is not the address it listens on (a
    /// container's name): in its certificate and in the written `providers.yaml`.
    public let advertisedHost: String?

    public init(
        faults: FaultProfile = .none,
        keepsBodies: Bool = false,
        host: String = "127.0.0.1",
        port: Int = 0,
        advertisedHost: String? = nil,
        clock: any HeraldClock = WallClock(),
        logger: Logger
    ) throws {
        self.advertisedHost = advertisedHost
        let (key, pem) = APNsSigningKey.generate(keyID: Self.keyID, teamID: Self.teamID)
        // The token URI is filled in once the port is known (see `providers(baseURL:)`).
        let account = try ServiceAccount.generate(
            projectID: Self.projectID,
            clientEmail: "herald-sender@\(Self.projectID).iam.gserviceaccount.com",
            tokenURI: "https://\(host)/token"
        )
        var configuration = ProviderSimulator.Configuration()
        configuration.apnsKeys = [.init(keyID: key.keyID, teamID: key.teamID, publicKey: key.publicKey)]
        configuration.serviceAccounts = [
            .init(
                clientEmail: account.account.clientEmail,
                projectID: Self.projectID,
                publicKey: account.account.publicKey
            )
        ]
        configuration.faults = faults
        configuration.keepsBodies = keepsBodies
        simulator = ProviderSimulator(configuration: configuration, now: { clock.now() }, logger: logger)
        server = SimulatorServer(
            simulator: simulator,
            tls: try SimulatorTLS.generate(hostNames: advertisedHost.map { [$0] } ?? []),
            host: host,
            port: port,
            logger: logger
        )
        apnsKey = key
        apnsKeyPEM = pem
        serviceAccountJSON = account.json
    }

    /// Provider settings that point every provider at the running simulator.
    public func providers() async throws -> HeraldConfiguration.Providers {
        let baseURL = await server.baseURL()
        var providers = HeraldConfiguration.Providers()
        providers.trustRootsPEM = server.tls.authorityPEM
        providers.apns.key = apnsKey
        providers.apns.productionURL = baseURL
        providers.apns.sandboxURL = baseURL
        var account = try ServiceAccount(json: serviceAccountJSON)
        account.tokenURI = baseURL + "/token"
        providers.fcm.serviceAccount = account
        providers.fcm.baseURL = baseURL
        providers.expo.baseURL = baseURL
        return providers
    }

    /// Writes the credentials and a `providers:` configuration section into `directory`: the APNs
    /// key (`apns-key.p8`), the service account (`fcm-service-account.json`), the simulator's
    /// authority (`simulator-ca.pem`) and `providers.yaml`. Returns the YAML's path.
    @discardableResult
    public func writeCredentials(to directory: String) async throws -> String {
        let baseURL =
            if let advertisedHost { "https://\(advertisedHost):\(await server.port())" } else { await server.baseURL() }
        let folder = URL(fileURLWithPath: directory, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func write(_ name: String, _ bytes: [UInt8], private: Bool) throws -> String {
            let url = folder.appendingPathComponent(name)
            try Data(bytes).write(to: url, options: .atomic)
            if `private` { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path) }
            return url.path
        }
        var account = try ServiceAccount(json: serviceAccountJSON)
        account.tokenURI = baseURL + "/token"
        let keyFile = try write("apns-key.p8", Array(apnsKeyPEM.utf8), private: true)
        let accountFile = try write(
            "fcm-service-account.json",
            Self.rewrite(serviceAccountJSON, tokenURI: account.tokenURI),
            private: true
        )
        let authorityFile = try write("simulator-ca.pem", Array(server.tls.authorityPEM.utf8), private: false)
        let yaml = """
            # Written by herald simulate-providers: every provider points at the simulator at \(baseURL).
            providers:
              trust_roots_file: \(authorityFile)
              apns:
                key_file: \(keyFile)
                key_id: \(Self.keyID)
                team_id: \(Self.teamID)
                production_url: \(baseURL)
                sandbox_url: \(baseURL)
              fcm:
                service_account_file: \(accountFile)
                base_url: \(baseURL)
              expo:
                base_url: \(baseURL)

            """
        return try write("providers.yaml", Array(yaml.utf8), private: false)
    }

    /// The key file's JSON with `token_uri` replaced.
    static func rewrite(_ json: [UInt8], tokenURI: String) throws -> [UInt8] {
        guard case .object(var object) = try JSONParser().parse(json) else { return json }
        object.members = object.members.map { $0.key == "token_uri" ? ($0.key, .string(tokenURI)) : $0 }
        return JSONValue.object(object).serializedBytes
    }
}
