import Crypto
import Foundation
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
        let notBefore = Date().addingTimeInterval(-3600)
        let notAfter = Date().addingTimeInterval(7 * 86_400)
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName { CommonName("Herald test authority") }
        let authority = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(authorityKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: authorityName,
            subject: authorityName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(authorityKey)
        )
        let key = P256.Signing.PrivateKey()
        let names =
            dnsNames.map { GeneralName.dnsName($0) }
            + ipAddresses.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: authorityName,
            subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                if !names.isEmpty { SubjectAlternativeNames(names) }
            },
            issuerPrivateKey: Certificate.PrivateKey(authorityKey)
        )
        return TestCertificates(
            authorityPEM: try authority.serializeAsPEM().pemString,
            certificatePEM: try certificate.serializeAsPEM().pemString,
            keyPEM: key.pemRepresentation
        )
    }
}
