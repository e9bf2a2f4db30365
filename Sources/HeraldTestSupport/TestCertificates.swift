import Foundation
import HeraldSimulator
import SwiftASN1
import X509

/// A throwaway certificate authority and a certificate it signs, PEM-encoded, for tests that speak
/// TLS to a real server (PostgreSQL) or hand the files to a real library (librdkafka).
public struct TestCertificates: Sendable {
    /// The authority's certificate: what a client trusts.
    public let authorityPEM: String
    /// The certificate the authority signed, and its private key.
    public let certificatePEM: String
    public let keyPEM: String

    /// - Parameters:
    ///   - dnsNames: the certificate's DNS names (`localhost` for a server on loopback).
    ///   - ipAddresses: its IPv4 addresses, as four bytes each.
    public static func make(
        commonName: String,
        dnsNames: [String] = [],
        ipAddresses: [[UInt8]] = [],
        usage: ExtendedKeyUsage.Usage = .serverAuth
    ) throws -> TestCertificates {
        let authority = try ThrowawayAuthority(name: "Herald test authority", validFor: 7)
        let (certificate, key) = try authority.issue(
            commonName: commonName,
            alternativeNames: dnsNames.map { .dnsName($0) }
                + ipAddresses.map { .ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) },
            usage: usage
        )
        return TestCertificates(
            authorityPEM: try authority.pem(),
            certificatePEM: try certificate.serializeAsPEM().pemString,
            keyPEM: key.pemRepresentation
        )
    }
}
