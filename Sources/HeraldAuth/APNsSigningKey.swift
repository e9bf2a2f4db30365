import Crypto
import HeraldEvents

/// An APNs token-authentication key: the `.p8` file (a PKCS #8 P-256 private key) with its key id
/// and the team it belongs to. Its description never shows the key.
public struct APNsSigningKey: Sendable, CustomStringConvertible {
    public var keyID: String
    public var teamID: String
    private let privateKey: P256.Signing.PrivateKey

    public enum LoadError: Error, Sendable, Equatable {
        /// The text is not a PEM-encoded P-256 private key.
        case notAP256Key
    }

    /// - Parameter pem: the `.p8` file's contents.
    public init(pem: String, keyID: String, teamID: String) throws(LoadError) {
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw .notAP256Key
        }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// A new random key, for the provider simulator and tests.
    public static func generate(keyID: String, teamID: String) -> (key: APNsSigningKey, pem: String) {
        let privateKey = P256.Signing.PrivateKey()
        let pem = privateKey.pemRepresentation
        // A key just generated always reads back.
        let key = try! APNsSigningKey(pem: pem, keyID: keyID, teamID: teamID)
        return (key, pem)
    }

    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    /// The provider token APNs expects in `authorization: bearer …`: an ES256 JWT with the key id
    /// in its header and the team and issue time in its claims.
    public func token(issuedAt: Timestamp) throws -> String {
        try JSONWebToken.compact(
            header: { writer in
                writer.member("alg", "ES256")
                writer.member("kid", keyID)
            },
            claims: { writer in
                writer.member("iss", teamID)
                writer.member("iat", integer: issuedAt.epochMilliseconds / 1000)
            },
            sign: { input in Array(try privateKey.signature(for: input).rawRepresentation) }
        )
    }

    public var description: String { "APNs key \(keyID) of team \(teamID)" }
}
