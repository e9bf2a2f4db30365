import HeraldEvents
import HeraldPolicy
import PostgresNIO

extension PostgresStore {
    @discardableResult
    public func apply(_ events: [DirectoryEvent]) async throws(StoreError) -> AppliedChanges {
        guard !events.isEmpty else { return AppliedChanges() }
        let batch = Self.encode(events)
        let limit = maximumDevicesPerUser
        return try await storeCall("directory apply") { [self] in
            // One function call, so the changes and the evictions they cause commit together.
            let rows = try await client.query(
                "SELECT user_id FROM herald_apply_capped(\(batch)::jsonb, \(limit)::integer) AS evicted(user_id)",
                logger: logger
            )
            var applied = AppliedChanges()
            for try await userID in rows.decode(String.self) { applied.evicted.append(userID) }
            return applied
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
            case .userDeleted(let userID, let at):
                json.member("t", "deleted")
                json.member("u", userID)
                json.member("at", integer: at.epochMilliseconds)
            }
            json.endObject()
        }
        json.endArray()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    public func deletions(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Timestamp] {
        let unique = Set(userIDs.map { OpaqueID($0) }).map(\.string)
        guard !unique.isEmpty else { return [:] }
        return try await storeCall("deletions") { [self] in
            var found: [OpaqueID: Timestamp] = [:]
            let rows = try await client.query(
                "SELECT user_id, deleted_at FROM deleted_users WHERE user_id = ANY(\(unique)::text[])",
                logger: logger
            )
            for try await (userID, deletedAt) in rows.decode((String, Int64).self) {
                found[OpaqueID(userID)] = Timestamp(epochMilliseconds: deletedAt)
            }
            return found
        }
    }

    public func recipients(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Recipient] {
        let unique = Set(userIDs.map { OpaqueID($0) }).map(\.string)
        guard !unique.isEmpty else { return [:] }
        return try await storeCall("recipients") { [self] in
            // One round trip, index searches driven by the list of users: each LATERAL part is fenced
            // (OFFSET 0) so the planner cannot turn it into a join that scans whole tables, which it
            // prefers for a 500-element `= ANY` list and which costs tens of milliseconds a batch.
            let rows = try await client.query(
                """
                SELECT x.* FROM unnest(\(unique)::text[]) AS u(user_id), LATERAL (
                    SELECT 0 AS part, d.user_id, d.device_id, d.platform, d.provider, d.token, d.app_id, d.sandbox,
                        d.locale, d.registered_at, NULL::text AS text
                    FROM devices d
                    WHERE d.user_id = u.user_id AND NOT EXISTS (
                        SELECT 1 FROM invalid_tokens i
                        WHERE i.provider = d.provider AND i.token = d.token AND i.invalidated_at >= d.registered_at)
                    UNION ALL
                    SELECT 1, p.user_id, NULL, NULL, NULL, NULL, NULL, NULL, p.locale, NULL, p.time_zone
                    FROM profiles p WHERE p.user_id = u.user_id
                    UNION ALL
                    SELECT 2, r.user_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, r.document
                    FROM preferences r WHERE r.user_id = u.user_id
                    OFFSET 0) AS x
                """,
                logger: logger
            )
            var result: [OpaqueID: Recipient] = [:]
            for try await row in rows {
                let (
                    part, userID, deviceID, platform, providerName, token, appID, sandbox, locale, registeredAt, text
                ) =
                    try row.decode(
                        (
                            Int32, String, String?, String?, String?, String?, String?, Bool?, String?, Int64?,
                            String?
                        ).self
                    )
                switch part {
                case 0:
                    guard let provider = PushProvider(rawValue: providerName ?? "") else {
                        throw StoreError(code: .storeQuery, message: "devices: unknown provider")
                    }
                    let device = RegisteredDevice(
                        deviceID: deviceID ?? "",
                        platform: platform ?? "",
                        provider: provider,
                        token: token ?? "",
                        appID: appID ?? "",
                        sandbox: sandbox ?? false,
                        locale: locale,
                        registeredAt: Timestamp(epochMilliseconds: registeredAt ?? 0)
                    )
                    result[OpaqueID(userID), default: Recipient(userID: userID)].devices.append(device)
                case 1:
                    result[OpaqueID(userID), default: Recipient(userID: userID)].locale = locale
                    result[OpaqueID(userID), default: Recipient(userID: userID)].timeZone = text
                default:
                    result[OpaqueID(userID), default: Recipient(userID: userID)].preferences =
                        PreferencesDocument.decode(text ?? "")
                }
            }
            Recipient.sortDevices(in: &result)
            return result
        }
    }
}
