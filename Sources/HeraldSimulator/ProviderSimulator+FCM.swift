import HeraldAuth
import HeraldEvents

extension ProviderSimulator {
    /// The google.rpc status name for an HTTP status, as Google's APIs pair them.
    static func rpcStatus(_ status: Int) -> String {
        switch status {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 429: "RESOURCE_EXHAUSTED"
        case 503: "UNAVAILABLE"
        default: "INTERNAL"
        }
    }

    /// A google.rpc error body, with an `FcmError` detail when `errorCode` is given.
    static func rpcError(_ status: Int, message: String, errorCode: String?) -> [UInt8] {
        var writer = JSONStreamWriter(capacity: 256)
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.member("code", integer: Int64(status))
        writer.member("message", message)
        writer.member("status", rpcStatus(status))
        if let errorCode {
            writer.key("details")
            writer.beginArray()
            writer.element()
            writer.beginObject()
            writer.member("@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError")
            writer.member("errorCode", errorCode)
            writer.endObject()
            writer.endArray()
        }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// `POST /token`: an RFC 7523 JWT-bearer grant, signed by a known service account.
    func oauthToken(_ request: SimulatorRequest) -> SimulatorResponse {
        func fail(_ error: String, _ description: String) -> SimulatorResponse {
            count(reason: error, of: "oauth")
            var writer = JSONStreamWriter(capacity: 128)
            writer.beginObject()
            writer.member("error", error)
            writer.member("error_description", description)
            writer.endObject()
            return .json(400, writer.bytes)
        }
        let form = Self.formFields(request.body)
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return fail("unsupported_grant_type", "Invalid grant_type.")
        }
        let now = self.now().epochMilliseconds
        guard let assertion = form["assertion"], let token = try? JSONWebToken(compact: assertion),
            let email = token.claims["iss"]?.stringValue,
            let account = configuration.serviceAccounts.first(where: { $0.clientEmail == email }),
            token.isSigned(by: account.publicKey)
        else { return fail("invalid_grant", "Invalid JWT Signature.") }
        guard let expires = token.seconds("exp"), expires * 1000 > now, let issued = token.seconds("iat"),
            issued * 1000 <= now + 60_000
        else {
            return fail(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe."
            )
        }
        guard
            token.claims["scope"]?.stringValue?.split(separator: " ").contains(
                "https://www.googleapis.com/auth/firebase.messaging"
            ) == true
        else {
            return fail("invalid_scope", "Invalid oauth scope or ID token audience provided.")
        }
        let lifetime = configuration.accessTokenLifetimeSeconds
        let accessToken = state.withLock { state in
            let accessToken = state.makeID("ya29.simulated-")
            // Saturated: a test may configure a lifetime far beyond any real one.
            let (span, overflow) = max(lifetime, 0).multipliedReportingOverflow(by: 1000)
            let (expiry, later) = now.addingReportingOverflow(overflow ? .max : span)
            state.accessTokens[accessToken] = (account.projectID, later ? .max : expiry)
            return accessToken
        }
        var writer = JSONStreamWriter(capacity: 128)
        writer.beginObject()
        writer.member("access_token", accessToken)
        // Google answers one second short of the lifetime.
        writer.member("expires_in", integer: lifetime - 1)
        writer.member("token_type", "Bearer")
        writer.endObject()
        return .json(200, writer.bytes)
    }

    /// `POST /v1/projects/{project}/messages:send`.
    func fcm(_ request: SimulatorRequest) -> SimulatorResponse {
        func fail(_ status: Int, _ message: String, _ errorCode: String?, retryAfter: Int? = nil) -> SimulatorResponse {
            count(reason: errorCode ?? Self.rpcStatus(status), of: "fcm")
            return .json(
                status,
                Self.rpcError(status, message: message, errorCode: errorCode),
                headers: retryAfter.map { [("retry-after", String($0))] } ?? []
            )
        }
        let parts = request.path.split(separator: "/")
        guard parts.count == 4, parts[0] == "v1", parts[1] == "projects", parts[3] == "messages:send" else {
            return fail(404, "The requested URL was not found on this server.", nil)
        }
        guard request.method == "POST" else { return fail(404, "Method not allowed for this resource.", nil) }
        let project = String(parts[2])
        let now = self.now().epochMilliseconds
        guard let authorization = request.header("authorization"), authorization.lowercased().hasPrefix("bearer "),
            let grant = state.withLock({ $0.accessTokens[String(authorization.dropFirst(7))] }), grant.expiresAt > now
        else {
            return fail(
                401,
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                nil
            )
        }
        guard grant.projectID == project else {
            return fail(
                403,
                "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)'.",
                nil
            )
        }
        guard request.body.count <= 4096 + 256 else { return fail(400, "Message is too big", "INVALID_ARGUMENT") }
        guard case .object(let body)? = try? JSONParser().parse(request.body),
            case .object(let message)? = body["message"]
        else { return fail(400, "Invalid JSON payload received.", "INVALID_ARGUMENT") }
        guard let token = message["token"]?.stringValue, Self.isFCMToken(token) else {
            return fail(400, "The registration token is not a valid FCM registration token", "INVALID_ARGUMENT")
        }
        if let answer = scripted(token) {
            let isFCMCode = answer.reason != Self.rpcStatus(answer.status)
            return fail(
                answer.status,
                "Scripted answer.",
                isFCMCode ? answer.reason : nil,
                retryAfter: answer.retryAfterSeconds
            )
        }
        if state.withLock({ $0.unregistered[token] }) != nil {
            return fail(404, "Requested entity was not found.", "UNREGISTERED")
        }
        switch rollFault() {
        case .dropConnection?: return .dropped
        case .internalError?: return fail(500, "Internal error encountered.", "INTERNAL")
        case .unavailable?:
            return fail(
                503,
                "The service is currently unavailable.",
                "UNAVAILABLE",
                retryAfter: configuration.faults.retryAfterSeconds
            )
        case .tooManyRequests?:
            return fail(
                429,
                "Quota exceeded for quota metric 'Send requests'.",
                "QUOTA_EXCEEDED",
                retryAfter: configuration.faults.retryAfterSeconds
            )
        case .unregistered?:
            unregister(token: token, at: Timestamp(epochMilliseconds: now))
            return fail(404, "Requested entity was not found.", "UNREGISTERED")
        case nil: break
        }
        let name = state.withLock { $0.makeID("projects/\(project)/messages/") }
        let id = message["data"]?["herald_notification_id"]?.stringValue ?? name
        accept(.fcm, id: id, token: token, body: request.body)
        var writer = JSONStreamWriter(capacity: 96)
        writer.beginObject()
        writer.member("name", name)
        writer.endObject()
        return .json(200, writer.bytes)
    }

    /// FCM registration tokens: long runs of letters, digits, `-`, `_` and `:`.
    static func isFCMToken(_ token: String) -> Bool {
        token.utf8.count >= 32
            && token.utf8.allSatisfy { byte in
                byte.isHexDigit || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
            }
    }

    /// `application/x-www-form-urlencoded` fields.
    static func formFields(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            fields[percentDecoded(parts[0])] = percentDecoded(parts[1])
        }
        return fields
    }

    private static func percentDecoded(_ bytes: ArraySlice<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
                let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
            {
                output.append(value)
                index += 3
            } else {
                output.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
