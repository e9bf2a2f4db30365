import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The simulator's TLS identity: a throwaway certificate authority, made at start, and a server
/// certificate it signs for `localhost`, `127.0.0.1` and any `hostNames` (the name a container
/// network gives the simulator). Clients trust the authority's PEM (written
/// where the sender's configuration points), just as they trust Apple's and Google's roots.
public struct SimulatorTLS: Sendable {
    /// The authority's certificate, PEM-encoded: what a client adds to its trust roots.
    public let authorityPEM: String
    let certificateChain: [NIOSSLCertificate]
    let privateKey: NIOSSLPrivateKey

    public static func generate(validFor days: Int = 30, hostNames: [String] = []) throws -> SimulatorTLS {
        let authority = try ThrowawayAuthority(name: "Herald provider simulator authority", validFor: days)
        let (server, serverKey) = try authority.issue(
            commonName: "localhost",
            alternativeNames: [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]
                + hostNames.filter { $0 != "localhost" }.map { .dnsName($0) },
            usage: .serverAuth
        )
        var serializer = DER.Serializer()
        try serializer.serialize(server)
        return SimulatorTLS(
            authorityPEM: try authority.pem(),
            certificateChain: [try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der)],
            privateKey: try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)
        )
    }

    /// Writes the authority's PEM to `path` (readable by the owner only is not needed: it is public).
    public func writeAuthority(to path: String) throws {
        try Data(authorityPEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    func serverConfiguration() -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificateChain.map { .certificate($0) },
            privateKey: .privateKey(privateKey)
        )
        configuration.applicationProtocols = ["h2", "http/1.1"]
        return configuration
    }
}
