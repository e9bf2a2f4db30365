import Foundation
import HeraldCatalog
import HeraldEvents
import HeraldProviders
import HeraldWorker

/// What `herald payload ...` does, apart from parsing flags.
public enum PayloadTool {
    /// One line of `herald payload notifykit` output for one input line, and the size warning if any.
    public static func notifyKitLine(_ line: String, nowMilliseconds: Int64) -> (output: String, warning: String?) {
        let input: JSONValue
        do {
            input = try JSONParser().parse(Array(line.utf8))
        } catch {
            return (JSONValue.object(JSONObject([("error", .string("invalid JSON: \(error)"))])).serialized, nil)
        }
        do {
            let output = try NotifyKitPayloadBuilder.build(input, nowMilliseconds: nowMilliseconds)
            return (String(decoding: output.message, as: UTF8.self), output.warning)
        } catch {
            return (JSONValue.object(JSONObject([("error", .string(error.message))])).serialized, nil)
        }
    }

    /// A device file: `{"token", "appId", "environment"?, "locale"?, "timeZone"?, "userId"?}`.
    struct DeviceFile {
        var device: Device
        var locale: String?
        var timeZone: String
        var userID: String?
    }

    static func readDevice(_ path: String) throws(CatalogTool.Failure) -> DeviceFile {
        guard let bytes = FileManager.default.contents(atPath: path),
            case .object(let object) = try? JSONParser().parse(Array(bytes))
        else {
            throw CatalogTool.Failure(description: "\(path): not a JSON object")
        }
        guard case .string(let token)? = object["token"], case .string(let appID)? = object["appId"] else {
            throw CatalogTool.Failure(description: "\(path): a device needs 'token' and 'appId'")
        }
        let environment = object["environment"]?.stringValue.flatMap(Device.Environment.init(rawValue:)) ?? .production
        return DeviceFile(
            device: Device(token: token, appID: appID, environment: environment),
            locale: object["locale"]?.stringValue,
            timeZone: object["timeZone"]?.stringValue ?? "UTC",
            userID: object["userId"]?.stringValue
        )
    }

    /// A rendered notification as a provider-neutral message for one device. Expiries count from
    /// the event's time, or from `now` for an event without one (never from the epoch, which would
    /// make every provider drop it as expired).
    public static func message(
        _ rendered: RenderedNotification,
        event: CloudEvent,
        recipient: String,
        device: Device,
        now: Timestamp
    ) -> PushMessage {
        OutboundBuilder.pushMessage(
            rendered,
            eventID: event.id,
            createdAt: event.time ?? now,
            recipient: recipient,
            token: device.token
        )
    }

    /// The request `provider` would get for the event in `eventFile` and the device in `deviceFile`.
    public static func show(
        provider: String,
        catalogDirectory: String,
        eventFile: String,
        deviceFile: String
    ) throws(CatalogTool.Failure) -> String {
        let file = try readDevice(deviceFile)
        let (event, rendered) = try CatalogTool.renderEvent(
            catalogDirectory: catalogDirectory,
            eventFile: eventFile,
            locale: file.locale,
            timeZone: file.timeZone
        )
        let now = Timestamp(epochMilliseconds: Int64(Date.now.timeIntervalSince1970 * 1000))
        let message = message(
            rendered,
            event: event,
            recipient: file.userID ?? "unknown",
            device: file.device,
            now: now
        )
        do {
            switch provider {
            case "apns":
                let request = try APNsPayloadBuilder.build(message, for: file.device)
                var lines = ["POST https://\(request.host)\(request.path)"]
                lines += request.headers.map { "\($0.name): \($0.value)" }
                lines.append("")
                lines.append(String(decoding: request.body, as: UTF8.self))
                lines.append("(\(request.body.count) bytes of \(APNsPayloadBuilder.limit(for: .alert)))")
                return lines.joined(separator: "\n")
            case "fcm":
                let body = try FCMPayloadBuilder.build(message, for: file.device)
                return String(decoding: body, as: UTF8.self) + "\n(\(body.count) bytes of \(FCMPayloadBuilder.limit))"
            default:
                let body = try ExpoPayloadBuilder.build(message, for: file.device)
                return String(decoding: body, as: UTF8.self) + "\n(\(body.count) bytes of \(ExpoPayloadBuilder.limit))"
            }
        } catch {
            throw CatalogTool.Failure(description: error.description)
        }
    }
}
