import Crypto
import HeraldEvents
import _CryptoExtras

/// A Google service account, as in the JSON key file Firebase hands out: what the FCM HTTP v1
/// OAuth2 flow needs. Its description never shows the private key.
public struct ServiceAccount: Sendable, CustomStringConvertible {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String?
    /// Where access tokens come from (`https://oauth2.googleapis.com/token` for Google).
    public var tokenURI: String
    private let privateKey: _RSA.Signing.PrivateKey

    /// The scope an FCM sender asks for.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    public struct LoadError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The key file's member that is missing or wrong; never its value.
        public var field: String
        public var description: String { "service account: \(field) is missing or invalid" }
    }

    /// Reads a service-account key file's JSON.
    public init(json: some Collection<UInt8>) throws(LoadError) {
        guard case .object(let object)? = try? JSONParser().parse(json) else {
            throw LoadError(field: "the file (not a JSON object)")
        }
        func string(_ name: String) throws(LoadError) -> String {
            guard let value = object[name]?.stringValue, !value.isEmpty else { throw LoadError(field: name) }
            return value
        }
        projectID = try string("project_id")
        clientEmail = try string("client_email")
        privateKeyID = object["private_key_id"]?.stringValue
        tokenURI = try string("token_uri")
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: try string("private_key"))
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError(field: "private_key")
        }
    }

    /// A new service account with a fresh 2048-bit key, for the provider simulator and tests: the
    /// account and its key file's JSON.
    public static func generate(
        projectID: String,
        clientEmail: String,
        tokenURI: String
    ) throws -> (account: ServiceAccount, json: [UInt8]) {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        var writer = JSONStreamWriter(capacity: 2048)
        writer.beginObject()
        writer.member("type", "service_account")
        writer.member("project_id", projectID)
        writer.member(
            "private_key_id",
            Base64URL.encode(Array(SHA256.hash(data: key.publicKey.derRepresentation)).prefix(12))
        )
        writer.member("private_key", key.pkcs8PEMRepresentation)
        writer.member("client_email", clientEmail)
        writer.member("token_uri", tokenURI)
        writer.endObject()
        return (try ServiceAccount(json: writer.bytes), writer.bytes)
    }

    public var publicKey: _RSA.Signing.PublicKey { privateKey.publicKey }

    /// The signed assertion exchanged for an access token (RFC 7523): an RS256 JWT valid for one hour.
    public func assertion(issuedAt: Timestamp, scope: String = ServiceAccount.messagingScope) throws -> String {
        let seconds = issuedAt.epochMilliseconds / 1000
        return try JSONWebToken.compact(
            header: { writer in
                writer.member("alg", "RS256")
                writer.member("typ", "JWT")
                if let privateKeyID { writer.member("kid", privateKeyID) }
            },
            claims: { writer in
                writer.member("iss", clientEmail)
                writer.member("scope", scope)
                writer.member("aud", tokenURI)
                writer.member("iat", integer: seconds)
                writer.member("exp", integer: seconds + 3600)
            },
            sign: { input in
                Array(try privateKey.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation)
            }
        )
    }

    public var description: String { "service account \(clientEmail) of project \(projectID)" }
}
