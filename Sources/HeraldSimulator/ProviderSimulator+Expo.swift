import HeraldEvents

extension ProviderSimulator {
    /// Expo's limit on messages per send request.
    static let expoBatchLimit = 100

    /// An Expo request-level error: `{"errors": [{"code", "message"}]}`.
    static func expoErrors(_ status: Int, code: String, message: String, retryAfter: Int? = nil) -> SimulatorResponse {
        var writer = JSONStreamWriter(capacity: 128)
        writer.beginObject()
        writer.key("errors")
        writer.beginArray()
        writer.element()
        writer.beginObject()
        writer.member("code", code)
        writer.member("message", message)
        writer.endObject()
        writer.endArray()
        writer.endObject()
        return .json(status, writer.bytes, headers: retryAfter.map { [("retry-after", String($0))] } ?? [])
    }

    /// `POST /--/api/v2/push/send`: one message or an array of up to 100; a ticket for each, in order.
    func expoSend(_ request: SimulatorRequest) -> SimulatorResponse {
        func fail(_ status: Int, _ code: String, _ message: String, retryAfter: Int? = nil) -> SimulatorResponse {
            count(reason: code, of: "expo")
            return Self.expoErrors(status, code: code, message: message, retryAfter: retryAfter)
        }
        guard request.method == "POST" else { return fail(405, "METHOD_NOT_ALLOWED", "Use POST.") }
        if let required = configuration.expoAccessToken, request.header("authorization") != "Bearer \(required)" {
            return fail(401, "UNAUTHORIZED", "The bearer token is invalid.")
        }
        let messages: [JSONValue]
        switch try? JSONParser().parse(request.body) {
        case .array(let array)?: messages = array
        case .object(let object)?: messages = [.object(object)]
        default: return fail(400, "VALIDATION_ERROR", "The request body must be a message or an array of messages.")
        }
        guard messages.count <= Self.expoBatchLimit else {
            return fail(
                400,
                "PUSH_TOO_MANY_NOTIFICATIONS",
                "You are trying to send more than 100 push notifications in one request."
            )
        }
        for message in messages {
            if let token = message["to"]?.stringValue, let answer = scripted(token), answer.status != 200 {
                return fail(answer.status, answer.reason, "Scripted answer.", retryAfter: answer.retryAfterSeconds)
            }
        }
        if let mixed = mixedProjects(messages) { return mixed }
        switch rollFault(perMessage: false) {
        case .dropConnection?: return .dropped
        case .internalError?: return fail(500, "INTERNAL_SERVER_ERROR", "An unknown error occurred.")
        case .unavailable?: return fail(503, "INTERNAL_SERVER_ERROR", "The service is temporarily unavailable.")
        case .tooManyRequests?:
            return fail(
                429,
                "TOO_MANY_REQUESTS",
                "The project is sending too many push notifications.",
                retryAfter: configuration.faults.retryAfterSeconds
            )
        case .unregistered?, nil: break
        }
        var writer = JSONStreamWriter(capacity: 64 + messages.count * 64)
        writer.beginObject()
        writer.key("data")
        writer.beginArray()
        let now = self.now()
        for message in messages {
            writer.element()
            writer.beginObject()
            let token = message["to"]?.stringValue ?? ""
            let size = JSONValue.array([message]).serializedBytes.count
            if !Self.isExpoToken(token) {
                count(reason: "DeviceNotRegistered", of: "expo")
                writer.member("status", "error")
                writer.member("message", "\"\(token)\" is not a registered push notification recipient")
                writer.key("details")
                writer.beginObject()
                writer.member("error", "DeviceNotRegistered")
                writer.member("expoPushToken", token)
                writer.endObject()
            } else if size > 4096 {
                count(reason: "MessageTooBig", of: "expo")
                writer.member("status", "error")
                writer.member("message", "Message too big")
                writer.key("details")
                writer.beginObject()
                writer.member("error", "MessageTooBig")
                writer.endObject()
            } else {
                // A ticket is only a promise: an unregistered device shows up in the receipt.
                var receiptError = scripted(token)?.reason
                if receiptError == nil, state.withLock({ $0.unregistered[token] != nil }) || rollUnregistered() {
                    unregister(token: token, at: now)
                    receiptError = "DeviceNotRegistered"
                }
                let ticket = state.withLock { state in
                    let ticket = state.makeID("0000-expo-ticket-")
                    state.receipts[ticket] =
                        receiptError.map { .error(code: $0, message: Self.expoReceiptMessage($0, token)) } ?? .ok
                    return ticket
                }
                if receiptError == nil {
                    let id = message["data"]?["herald_notification_id"]?.stringValue ?? ticket
                    accept(.expo, id: id, token: token, body: message.serializedBytes)
                }
                writer.member("status", "ok")
                writer.member("id", ticket)
            }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return .json(200, writer.bytes)
    }

    /// Expo's answer to a request whose tokens belong to more than one project: 400
    /// `PUSH_TOO_MANY_EXPERIENCE_IDS`, with each project's tokens in `details`; `nil` if they share one.
    private func mixedProjects(_ messages: [JSONValue]) -> SimulatorResponse? {
        var projects: [(project: String, tokens: [String])] = []
        state.withLock { state in
            for message in messages {
                guard let token = message["to"]?.stringValue else { continue }
                let project = state.expoProjects[token] ?? Self.defaultExpoProject
                if let index = projects.firstIndex(where: { $0.project == project }) {
                    projects[index].tokens.append(token)
                } else {
                    projects.append((project, [token]))
                }
            }
        }
        guard projects.count > 1 else { return nil }
        count(reason: "PUSH_TOO_MANY_EXPERIENCE_IDS", of: "expo")
        var writer = JSONStreamWriter(capacity: 256)
        writer.beginObject()
        writer.key("errors")
        writer.beginArray()
        writer.element()
        writer.beginObject()
        writer.member("code", "PUSH_TOO_MANY_EXPERIENCE_IDS")
        writer.member(
            "message",
            "All push notification messages in the same request must be for the same project; "
                + "separate your push notifications by project."
        )
        writer.key("details")
        writer.beginObject()
        for (project, tokens) in projects {
            writer.key(project)
            writer.beginArray()
            for token in tokens {
                writer.element()
                writer.string(token)
            }
            writer.endArray()
        }
        writer.endObject()
        writer.endObject()
        writer.endArray()
        writer.endObject()
        return .json(400, writer.bytes)
    }

    /// Whether this message's device "turns out" unregistered, as the fault profile's 410 rate says.
    private func rollUnregistered() -> Bool {
        let rate = configuration.faults.unregisteredRate
        return rate > 0 && state.withLock { $0.dice.chance(rate) }
    }

    /// `POST /--/api/v2/push/getReceipts` with `{"ids": [...]}`: the receipts known; unknown ids are
    /// left out, as Expo does for receipts not ready or expired.
    func expoReceipts(_ request: SimulatorRequest) -> SimulatorResponse {
        guard case .object(let body)? = try? JSONParser().parse(request.body), case .array(let ids)? = body["ids"]
        else {
            count(reason: "VALIDATION_ERROR", of: "expo")
            return Self.expoErrors(400, code: "VALIDATION_ERROR", message: "\"ids\" must be an array of receipt ids.")
        }
        var writer = JSONStreamWriter(capacity: 64 + ids.count * 48)
        writer.beginObject()
        writer.key("data")
        writer.beginObject()
        state.withLock { state in
            for case .string(let id) in ids {
                guard let receipt = state.receipts[id] else { continue }
                writer.key(id)
                writer.beginObject()
                switch receipt {
                case .ok:
                    writer.member("status", "ok")
                case .error(let code, let message):
                    writer.member("status", "error")
                    writer.member("message", message)
                    writer.key("details")
                    writer.beginObject()
                    writer.member("error", code)
                    writer.endObject()
                }
                writer.endObject()
            }
        }
        writer.endObject()
        writer.endObject()
        return .json(200, writer.bytes)
    }

    static func expoReceiptMessage(_ code: String, _ token: String) -> String {
        switch code {
        case "DeviceNotRegistered": "\"\(token)\" is not a registered push notification recipient"
        case "MessageTooBig": "Message too big"
        case "MessageRateExceeded": "Too many messages to this device"
        case "MismatchSenderId": "The FCM server key does not match the app's sender id"
        case "InvalidCredentials": "The push credentials for this app are invalid"
        default: code
        }
    }

    /// `ExponentPushToken[…]` or `ExpoPushToken[…]`.
    static func isExpoToken(_ token: String) -> Bool {
        (token.hasPrefix("ExponentPushToken[") || token.hasPrefix("ExpoPushToken[")) && token.hasSuffix("]")
    }
}
