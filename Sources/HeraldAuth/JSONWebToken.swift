import Crypto
import HeraldEvents
import _CryptoExtras

/// A compact JSON Web Token (RFC 7519) split into its parts. Signing and verification use
/// swift-crypto; this type only does the encoding around them.
public struct JSONWebToken: Sendable {
    public var header: JSONValue
    public var claims: JSONValue
    /// `base64url(header) "." base64url(claims)`: what the signature covers.
    public var signingInput: String
    public var signature: [UInt8]

    /// Why a token could not be read.
    public struct FormatError: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// Splits and decodes `compact` without checking its signature.
    public init(compact: some StringProtocol) throws(FormatError) {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw FormatError(reason: "not three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw FormatError(reason: "a part is not base64url") }
        do {
            header = try JSONParser().parse(headerBytes)
            claims = try JSONParser().parse(claimBytes)
        } catch {
            throw FormatError(reason: "a part is not JSON")
        }
        guard case .object = header, case .object = claims else {
            throw FormatError(reason: "header or claims are not JSON objects")
        }
        signingInput = "\(parts[0]).\(parts[1])"
        self.signature = signature
    }

    /// The header's `alg`.
    public var algorithm: String? { header["alg"]?.stringValue }
    /// The header's `kid`.
    public var keyID: String? { header["kid"]?.stringValue }

    /// A numeric claim (`iat`, `exp`) in whole seconds.
    public func seconds(_ claim: String) -> Int64? {
        guard case .number(let text)? = claims[claim] else { return nil }
        return Int64(text)
    }

    /// Whether the signature is a valid ES256 signature of `signingInput` by `key`.
    public func isSigned(by key: P256.Signing.PublicKey) -> Bool {
        guard algorithm == "ES256",
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return key.isValidSignature(signature, for: Array(signingInput.utf8))
    }

    /// Whether the signature is a valid RS256 signature of `signingInput` by `key`.
    public func isSigned(by key: _RSA.Signing.PublicKey) -> Bool {
        guard algorithm == "RS256" else { return false }
        return key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature),
            for: Array(signingInput.utf8),
            padding: .insecurePKCS1v1_5
        )
    }

    /// `header.claims.signature`, with `sign` producing the signature of the signing input.
    static func compact(
        header: (inout JSONStreamWriter) -> Void,
        claims: (inout JSONStreamWriter) -> Void,
        sign: ([UInt8]) throws -> [UInt8]
    ) rethrows -> String {
        var headerWriter = JSONStreamWriter(capacity: 64)
        headerWriter.beginObject()
        header(&headerWriter)
        headerWriter.endObject()
        var claimWriter = JSONStreamWriter(capacity: 256)
        claimWriter.beginObject()
        claims(&claimWriter)
        claimWriter.endObject()
        let input = Base64URL.encode(headerWriter.bytes) + "." + Base64URL.encode(claimWriter.bytes)
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }
}
