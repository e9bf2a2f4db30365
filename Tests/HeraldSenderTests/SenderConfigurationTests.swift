import Foundation
import HeraldApp
import HeraldAuth
import HeraldSimulator
import HeraldTestSupport
import Testing

@Suite("herald.yaml: sender and providers")
struct SenderConfigurationTests {
    let scratch = ScratchDirectory()

    func file(_ name: String, _ text: String) throws -> String {
        try scratch.file(name, text)
    }

    @Test(
        "providers.trust_roots_file must hold a PEM certificate, for the sender: anything else is refused naming the key; a worker does not read it"
    )
    func trustRoots() throws {
        let authority = try ThrowawayAuthority(name: "Herald test roots", validFor: 1)
        let valid = try file("roots.pem", try authority.pem())
        let loaded = try HeraldConfiguration.load(
            path: try file("valid.yaml", "providers:\n  trust_roots_file: \(valid)\n"),
            environment: [:],
            roles: [.sender]
        )
        #expect(loaded.providers.trustRootsPEM == (try authority.pem()))
        // Not a certificate: a private key, text, nothing. Before, the sender started reading them
        // and stopped at its first provider client with TLS's `failedToLoadCertificate`, exit 1.
        let (_, key) = APNsSigningKey.generate(keyID: "KEY1234567", teamID: "TEAM123456")
        for (name, content) in [("key.pem", key), ("text.pem", "secret-looking text\n"), ("empty.pem", "")] {
            let path = try file(name, content)
            let config = try file("\(name).yaml", "providers:\n  trust_roots_file: \(path)\n")
            for roles: Set<HeraldRole> in [[.sender], [.worker, .sender]] {
                do {
                    _ = try HeraldConfiguration.load(path: config, environment: [:], roles: roles)
                    Issue.record("\(name), \(roles): accepted")
                } catch {
                    let message = "\(error)"
                    #expect(
                        message.contains("providers.trust_roots_file: \(path) holds no PEM certificate"),
                        "\(message)"
                    )
                    #expect(!message.contains("secret-looking") && !message.contains("PRIVATE KEY"))
                }
            }
            // A worker does not use the roots, and does not check what they hold.
            #expect(throws: Never.self) {
                try HeraldConfiguration.load(path: config, environment: [:], roles: [.worker])
            }
        }
        // Nor does it read them: a configuration shared by both roles names a file that only the
        // sender's pod mounts. Before, a worker stopped at start-up with `cannot read`.
        let unmounted = scratch.path + "/sender-only/roots.pem"
        let shared = try file("shared.yaml", "providers:\n  trust_roots_file: \(unmounted)\n")
        let worker = try HeraldConfiguration.load(path: shared, environment: [:], roles: [.worker])
        #expect(worker.providers.trustRootsPEM == nil)
        #expect(throws: ConfigurationError.self) {
            try HeraldConfiguration.load(path: shared, environment: [:], roles: [.sender])
        }
    }

    @Test("credentials from files, retry delays, layered files, and the worker's topics by default")
    func layered() throws {
        let (_, pem) = APNsSigningKey.generate(keyID: "KEY1234567", teamID: "TEAM123456")
        let keyFile = try file("key.p8", pem)
        let base = try file(
            "herald.yaml",
            """
            worker:
              outbound_topic: team.outbound
            sender:
              retry_delays: [5s, 30s]
              retry_jitter: 0.2
            """
        )
        let providers = try file(
            "providers.yaml",
            """
            providers:
              apns:
                key_file: \(keyFile)
                key_id: KEY1234567
                team_id: TEAM123456
                connect_timeout: 20s
              expo:
                enabled: false
            sender:
              retry_delays: [1s, 2s, 3s]
            """
        )
        let configuration = try HeraldConfiguration.load(
            paths: [base, providers],
            environment: ["HERALD_PROVIDERS_FCM_CONNECT_TIMEOUT": "1500ms"]
        )
        #expect(configuration.sender.retryDelays == [.seconds(1), .seconds(2), .seconds(3)], "the later file wins")
        #expect(configuration.sender.retryJitter == 0.2)
        #expect(configuration.sender.outboundTopic == "team.outbound")
        #expect(configuration.providers.apns.key?.keyID == "KEY1234567")
        #expect(configuration.providers.fcm.serviceAccount == nil)
        #expect(!configuration.providers.expo.enabled)
        #expect(configuration.providers.apns.connectTimeout == .seconds(20))
        #expect(configuration.providers.fcm.connectTimeout == .milliseconds(1500))
        #expect(configuration.providers.expo.connectTimeout == .seconds(5), "the default")
    }

    @Test("a bad credential fails at start-up naming the key, never its contents")
    func badCredentials() throws {
        let secret = "-----BEGIN PRIVATE KEY-----\nTHIS-IS-SECRET\n-----END PRIVATE KEY-----\n"
        let keyFile = try file("key.p8", secret)
        let yaml = try file(
            "herald.yaml",
            """
            providers:
              apns:
                key_file: \(keyFile)
                key_id: KEY1234567
                team_id: TEAM123456
            """
        )
        #expect {
            try HeraldConfiguration.load(path: yaml, environment: [:])
        } throws: { error in
            let text = "\(error)"
            return text.contains("providers.apns.key_file") && text.contains("P-256")
                && !text.contains("THIS-IS-SECRET")
        }
        #expect {
            try HeraldConfiguration.load(
                path: nil,
                environment: [
                    "HERALD_PROVIDERS_FCM_SERVICE_ACCOUNT": #"{"project_id": "p", "private_key": "SECRET-KEY"}"#
                ]
            )
        } throws: { error in
            let text = "\(error)"
            return text.contains("HERALD_PROVIDERS_FCM_SERVICE_ACCOUNT") && text.contains("client_email")
                && !text.contains("SECRET-KEY")
        }
        #expect {
            try HeraldConfiguration.load(path: nil, environment: ["HERALD_PROVIDERS_APNS_KEY": secret])
        } throws: { error in
            "\(error)".contains("providers.apns.key_id") && !"\(error)".contains("THIS-IS-SECRET")
        }
        #expect {
            try HeraldConfiguration.load(path: nil, environment: ["HERALD_SENDER_RETRY_DELAYS": "10s,soon"])
        } throws: { error in
            "\(error)".contains("HERALD_SENDER_RETRY_DELAYS") && "\(error)".contains("soon")
        }
    }
}
