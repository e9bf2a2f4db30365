import HeraldAuth
import HeraldEvents

extension ProviderSimulator {
    /// The push types APNs knows (`apns-push-type`).
    static let apnsPushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets",
    ]

    /// How old a provider token may be before APNs calls it expired.
    static let providerTokenLifetimeMilliseconds: Int64 = 3_600_000

    /// `POST /3/device/{token}`, checked in the order APNs reports problems: method and path, the
    /// provider token, the headers, the device token, then the payload.
    func apns(_ request: SimulatorRequest) -> SimulatorResponse {
        func reject(
            _ status: Int,
            _ reason: String,
            timestamp: Int64? = nil,
            retryAfter: Int? = nil
        ) -> SimulatorResponse {
            count(reason: reason, of: "apns")
            var writer = JSONStreamWriter(capacity: 64)
            writer.beginObject()
            writer.member("reason", reason)
            if let timestamp { writer.member("timestamp", integer: timestamp) }
            writer.endObject()
            var headers = request.header("apns-id").map { [("apns-id", $0)] } ?? []
            if let retryAfter { headers.append(("retry-after", String(retryAfter))) }
            return .json(status, writer.bytes, headers: headers)
        }
        guard request.method == "POST" else { return reject(405, "MethodNotAllowed") }
        let token = request.path.dropFirst("/3/device".count).drop { $0 == "/" }
        guard !token.contains("/") else { return reject(404, "BadPath") }

        for name in ["apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id"]
        where request.count(of: name) > 1 {
            return reject(400, "DuplicateHeaders")
        }
        guard let authorization = request.header("authorization") else { return reject(403, "MissingProviderToken") }
        let now = self.now().epochMilliseconds
        switch verifyProviderToken(authorization, now: now) {
        case .valid: break
        case .invalid: return reject(403, "InvalidProviderToken")
        case .expired: return reject(403, "ExpiredProviderToken")
        }

        guard let topic = request.header("apns-topic"), !topic.isEmpty else { return reject(400, "MissingTopic") }
        if !configuration.apnsTopics.isEmpty && !configuration.apnsTopics.contains(topic) {
            return reject(400, "TopicDisallowed")
        }
        let pushType = request.header("apns-push-type")
        if let pushType, !Self.apnsPushTypes.contains(pushType) { return reject(400, "InvalidPushType") }
        if let priority = request.header("apns-priority"), !["1", "5", "10"].contains(priority) {
            return reject(400, "BadPriority")
        }
        if let expiration = request.header("apns-expiration"), Int64(expiration) == nil {
            return reject(400, "BadExpirationDate")
        }
        let apnsID = request.header("apns-id")
        if let apnsID, !Self.isUUID(apnsID) { return reject(400, "BadMessageId") }
        if let collapseID = request.header("apns-collapse-id"), collapseID.utf8.count > 64 {
            return reject(400, "BadCollapseId")
        }

        guard !token.isEmpty else { return reject(400, "MissingDeviceToken") }
        guard Self.isDeviceToken(token) else { return reject(400, "BadDeviceToken") }

        guard !request.body.isEmpty else { return reject(400, "PayloadEmpty") }
        let limit = pushType == "voip" ? 5120 : 4096
        guard request.body.count <= limit else { return reject(413, "PayloadTooLarge") }

        let tokenText = String(token)
        if let answer = scripted(tokenText) {
            return reject(
                answer.status,
                answer.reason,
                timestamp: answer.status == 410 ? now : nil,
                retryAfter: answer.retryAfterSeconds
            )
        }
        if let unregisteredAt = state.withLock({ $0.unregistered[tokenText] }) {
            return reject(410, "Unregistered", timestamp: unregisteredAt)
        }
        switch rollFault() {
        case .dropConnection?: return .dropped
        case .internalError?: return reject(500, "InternalServerError")
        case .unavailable?: return reject(503, "ServiceUnavailable")
        case .tooManyRequests?: return reject(429, "TooManyRequests")
        case .unregistered?:
            unregister(token: tokenText, at: Timestamp(epochMilliseconds: now))
            return reject(410, "Unregistered", timestamp: now)
        case nil: break
        }
        let id = apnsID ?? state.withLock { $0.makeID("00000000-0000-8000-8000-") }
        accept(.apns, id: id, token: tokenText, body: request.body)
        return SimulatorResponse(status: 200, headers: [("apns-id", id)])
    }

    enum ProviderTokenCheck { case valid, invalid, expired }

    /// `authorization: bearer <ES256 JWT>` signed by a known key of the team in `iss`, issued within
    /// the last hour.
    func verifyProviderToken(_ authorization: String, now: Int64) -> ProviderTokenCheck {
        guard authorization.lowercased().hasPrefix("bearer ") else { return .invalid }
        let compact = String(authorization.dropFirst("bearer ".count))
        let known = state.withLock { $0.verifiedProviderTokens[compact] }
        let issuedAt: Int64
        if let known {
            issuedAt = known.issuedAt
        } else {
            guard let token = try? JSONWebToken(compact: compact), let keyID = token.keyID,
                let key = configuration.apnsKeys.first(where: { $0.keyID == keyID }),
                token.claims["iss"]?.stringValue == key.teamID, let seconds = token.seconds("iat"),
                token.isSigned(by: key.publicKey)
            else { return .invalid }
            issuedAt = seconds * 1000
            state.withLock { state in
                if state.verifiedProviderTokens.count > 10_000 { state.verifiedProviderTokens.removeAll() }
                state.verifiedProviderTokens[compact] = (key.teamID, keyID, issuedAt)
            }
        }
        // A token from the future is as wrong as a forged one; one over an hour old has expired.
        if issuedAt > now + 60_000 { return .invalid }
        return now - issuedAt > Self.providerTokenLifetimeMilliseconds ? .expired : .valid
    }

    /// APNs device tokens are 64 to 200 hexadecimal digits.
    static func isDeviceToken(_ token: Substring) -> Bool {
        (64...200).contains(token.utf8.count) && token.utf8.allSatisfy { $0.isHexDigit }
    }

    /// 8-4-4-4-12 hexadecimal digits.
    static func isUUID(_ text: String) -> Bool {
        // One pass over the bytes, without splitting: it runs on every request.
        var length = 0
        for byte in text.utf8 {
            switch length {
            case 8, 13, 18, 23: guard byte == UInt8(ascii: "-") else { return false }
            default: guard byte.isHexDigit else { return false }
            }
            length += 1
        }
        return length == 36
    }
}

extension UInt8 {
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
