import HeraldEvents
import HeraldPolicy
import PostgresNIO

extension PostgresStore {
    public func apply(_ events: [DirectoryEvent]) async throws(StoreError) {
        guard !events.isEmpty else { return }
        let batch = Self.encode(events)
        try await storeCall("directory apply") {
            try await client.query("SELECT herald_apply(\(batch)::jsonb)", logger: logger)
        }
    }

    /// The batch in `herald_apply`'s shape: one compact object per change.
    static func encode(_ events: [DirectoryEvent]) -> String {
        var json = JSONStreamWriter(capacity: events.count * 200)
        json.beginArray()
        for event in events {
            json.element()
            json.beginObject()
            switch event {
            case .deviceRegistered(let device):
                json.member("t", "registered")
                json.member("u", device.userID)
                json.member("d", device.deviceID)
                json.member("pl", device.platform)
                json.member("pv", device.provider.rawValue)
                json.member("tk", device.token)
                json.member("a", device.appID)
                json.key("sb")
                json.bool(device.sandbox)
                if let locale = device.locale { json.member("l", locale) }
                json.member("at", integer: device.at.epochMilliseconds)
            case .deviceUnregistered(let userID, let deviceID, let at):
                json.member("t", "unregistered")
                json.member("u", userID)
                json.member("d", deviceID)
                json.member("at", integer: at.epochMilliseconds)
            case .tokenInvalidated(let provider, let token, let at):
                json.member("t", "invalidated")
                json.member("pv", provider.rawValue)
                json.member("tk", token)
                json.member("at", integer: at.epochMilliseconds)
            case .profileUpdated(let userID, let locale, let timeZone, let at):
                json.member("t", "profile")
                json.member("u", userID)
                if let locale { json.member("l", locale) }
                if let timeZone { json.member("tz", timeZone) }
                json.member("at", integer: at.epochMilliseconds)
            case .preferencesUpdated(let userID, let preferences, let at):
                json.member("t", "preferences")
                json.member("u", userID)
                json.member("doc", PreferencesDocument.encode(preferences))
                json.member("at", integer: at.epochMilliseconds)
            }
            json.endObject()
        }
        json.endArray()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    public func recipients(_ userIDs: [String]) async throws(StoreError) -> [String: Recipient] {
        let unique = Array(Set(userIDs))
        guard !unique.isEmpty else { return [:] }
        return try await storeCall("recipients") {
            // One query for the batch: profile and preferences repeat on each of a user's device rows.
            let rows = try await client.query(
                """
                SELECT u.user_id, p.locale, p.time_zone, pr.document, d.device_id, d.platform, d.provider, d.token,
                    d.app_id, d.sandbox, d.locale, d.registered_at
                FROM unnest(\(unique)::text[]) AS u(user_id)
                LEFT JOIN profiles p ON p.user_id = u.user_id
                LEFT JOIN preferences pr ON pr.user_id = u.user_id
                LEFT JOIN devices d ON d.user_id = u.user_id AND NOT EXISTS (
                    SELECT 1 FROM invalid_tokens i
                    WHERE i.provider = d.provider AND i.token = d.token AND i.invalidated_at >= d.registered_at)
                WHERE p.user_id IS NOT NULL OR pr.user_id IS NOT NULL OR d.user_id IS NOT NULL
                ORDER BY u.user_id, d.registered_at, d.device_id
                """,
                logger: logger
            )
            var result: [String: Recipient] = [:]
            for try await row in rows {
                let (userID, locale, timeZone, document, deviceID) = try row.decode(
                    (String, String?, String?, String?, String?).self
                )
                var recipient =
                    result[userID]
                    ?? Recipient(
                        userID: userID,
                        locale: locale,
                        timeZone: timeZone,
                        preferences: document.map(PreferencesDocument.decode) ?? Preferences()
                    )
                if let deviceID {
                    let (_, _, _, _, _, platform, providerName, token, appID, sandbox, deviceLocale, registeredAt) =
                        try row.decode(
                            (
                                String, String?, String?, String?, String?, String, String, String, String, Bool,
                                String?, Int64
                            ).self
                        )
                    guard let provider = PushProvider(rawValue: providerName) else {
                        throw StoreError(code: .storeQuery, message: "devices: unknown provider")
                    }
                    recipient.devices.append(
                        RegisteredDevice(
                            deviceID: deviceID,
                            platform: platform,
                            provider: provider,
                            token: token,
                            appID: appID,
                            sandbox: sandbox,
                            locale: deviceLocale,
                            registeredAt: Timestamp(epochMilliseconds: registeredAt)
                        )
                    )
                }
                result[userID] = recipient
            }
            return result
        }
    }
}
