import Foundation
import HeraldApp
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `kafka.ssl_*` against librdkafka's own TLS set-up: the files are read, as a client would read
/// them, while the configuration is loaded.
@Suite("herald.yaml: Kafka over TLS")
struct KafkaTLSConfigurationTests {
    let scratch = ScratchDirectory()

    /// A client certificate and its key, PEM-encoded, signed by a throwaway authority.
    static func clientIdentity() throws -> (certificate: String, key: String) {
        let made = try TestCertificates.make(commonName: "herald-worker", usage: .clientAuth)
        return (made.certificatePEM, made.keyPEM)
    }

    func load(_ kafka: String, environment: [String: String] = [:]) throws -> HeraldConfiguration {
        try HeraldConfiguration.load(
            path: try scratch.file("herald.yaml", "kafka:\n" + kafka),
            environment: environment
        )
    }

    func error(_ kafka: String, environment: [String: String] = [:]) -> String? {
        do {
            _ = try load(kafka, environment: environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("an authority and a client certificate that librdkafka accepts reach every client")
    func accepted() throws {
        let authority = try scratch.file("ca.pem", try SimulatorTLS.generate().authorityPEM)
        let identity = try Self.clientIdentity()
        let certificate = try scratch.file("client.pem", identity.certificate)
        let key = try scratch.file("client.key", identity.key)
        let configuration = try load(
            """
              security_protocol: ssl
              ssl_ca_file: \(authority)
              ssl_certificate_file: \(certificate)
              ssl_key_file: \(key)
            """
        )
        let options = WorkerApp.clientOptions(configuration.kafka, bootstrapServers: ["kafka-1:9093"])
        #expect(options.properties["security.protocol"] == "ssl")
        #expect(options.properties["ssl.ca.location"] == authority)
        #expect(options.properties["ssl.certificate.location"] == certificate)
        #expect(options.properties["ssl.key.location"] == key)
    }

    @Test("a file librdkafka cannot use is refused at start-up, naming its key")
    func refused() throws {
        let notPEM = try scratch.file("ca.pem", "this is not a certificate\n")
        let caError = error("  security_protocol: sasl_ssl\n  ssl_ca_file: \(notPEM)\n", environment: saslEnvironment)
        #expect(caError?.contains("kafka.ssl_ca_file: ") == true, "\(caError ?? "accepted")")
        #expect(caError?.contains("ssl.ca.location") == true, "librdkafka's reason: \(caError ?? "accepted")")

        // A key that is not the certificate's: librdkafka checks that they belong together.
        let identity = try Self.clientIdentity()
        let certificate = try scratch.file("client.pem", identity.certificate)
        let otherKey = try scratch.file("other.key", try Self.clientIdentity().key)
        let secret = "k3y-passw0rd-not-to-show"
        let passwordFile = try scratch.file("key.password", secret + "\n")
        let keyError = error(
            """
              security_protocol: ssl
              ssl_certificate_file: \(certificate)
              ssl_key_file: \(otherKey)
              ssl_key_password_file: \(passwordFile)
            """
        )
        #expect(keyError?.contains("kafka.ssl_certificate_file and kafka.ssl_key_file: ") == true, "\(keyError ?? "")")
        #expect(keyError?.contains(secret) == false, "the key's password is never shown")

        // The password from the variable is never shown either.
        let garbageKey = try scratch.file(
            "garbage.key",
            "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
        )
        let variableError = error(
            "  security_protocol: ssl\n  ssl_certificate_file: \(certificate)\n  ssl_key_file: \(garbageKey)\n",
            environment: ["HERALD_KAFKA_SSL_KEY_PASSWORD": secret]
        )
        #expect(variableError != nil)
        #expect(variableError?.contains(secret) == false, "\(variableError ?? "")")
    }

    let saslEnvironment = [
        "HERALD_KAFKA_SASL_MECHANISM": "PLAIN", "HERALD_KAFKA_SASL_USERNAME": "herald",
        "HERALD_KAFKA_SASL_PASSWORD": "pw",
    ]
}
