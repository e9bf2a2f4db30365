import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority made on the spot, valid for a few days, and the certificates it signs:
/// the provider simulator's TLS identity, and the servers and clients of tests that speak TLS to a
/// real server or hand the files to a real library.
public struct ThrowawayAuthority: Sendable {
    public let certificate: Certificate
    let key: P256.Signing.PrivateKey
    let notBefore: Date
    let notAfter: Date

    public init(name: String, validFor days: Int) throws {
        notBefore = Date().addingTimeInterval(-3600)
        notAfter = Date().addingTimeInterval(Double(days) * 86_400)
        key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName {
            OrganizationName("Herald")
            CommonName(name)
        }
        certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
    }

    /// The authority's certificate, PEM-encoded: what a client trusts.
    public func pem() throws -> String { try certificate.serializeAsPEM().pemString }

    /// A certificate for `commonName`, its alternative names and `usage`, signed by the authority,
    /// and its new private key.
    public func issue(
        commonName: String,
        alternativeNames: [GeneralName] = [],
        usage: ExtendedKeyUsage.Usage
    ) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
        let issuedKey = P256.Signing.PrivateKey()
        let issued = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(issuedKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: certificate.subject,
            subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                if !alternativeNames.isEmpty { SubjectAlternativeNames(alternativeNames) }
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        return (issued, issuedKey)
    }
}
