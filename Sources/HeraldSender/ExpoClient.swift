import AsyncHTTPClient
import HeraldEvents
import HeraldWorker

/// Expo's push API: messages in requests of up to 100, a ticket for each, and receipts fetched
/// later for the tickets that were accepted.
public final class ExpoClient: Sendable {
    public struct Configuration: Sendable {
        public var baseURL = "https://exp.host"
        /// Sent as `Authorization: Bearer` when the Expo project requires access tokens.
        public var accessToken: String?
        public var requestTimeout = Duration.seconds(15)
        public var concurrency = 8

        public init() {}
    }

    /// Expo's limits per request.
    public static let messagesPerRequest = 100
    public static let receiptsPerRequest = 1000

    let configuration: Configuration
    let client: HTTPClient
    let limiter: ConcurrencyLimiter

    public init(configuration: Configuration, extraTrustRootsPEM: String?) throws {
        self.configuration = configuration
        client = try ProviderTransport.makeClient(extraTrustRootsPEM: extraTrustRootsPEM, connectTimeout: .seconds(5))
        limiter = ConcurrencyLimiter(limit: configuration.concurrency)
    }

    private var headers: [(String, String)] {
        [("content-type", "application/json"), ("accept", "application/json")]
            + (configuration.accessToken.map { [("authorization", "Bearer \($0)")] } ?? [])
    }

    /// One outcome per message, in order: `.delivered(receipt: ticketID)` for a ticket that was
    /// accepted (its receipt still to come).
    public func send(_ messages: [OutboundMessage]) async -> [DeliveryOutcome] {
        var outcomes: [DeliveryOutcome] = []
        outcomes.reserveCapacity(messages.count)
        await withTaskGroup(of: (Int, [DeliveryOutcome]).self) { group in
            for start in stride(from: 0, to: messages.count, by: Self.messagesPerRequest) {
                let chunk = Array(messages[start..<min(start + Self.messagesPerRequest, messages.count)])
                group.addTask { (start, await self.limiter.withPermit { await self.sendChunk(chunk) }) }
            }
            var byStart: [Int: [DeliveryOutcome]] = [:]
            for await (start, chunk) in group { byStart[start] = chunk }
            for start in byStart.keys.sorted() { outcomes += byStart[start]! }
        }
        return outcomes
    }

    private func sendChunk(_ messages: [OutboundMessage]) async -> [DeliveryOutcome] {
        var body: [UInt8] = [UInt8(ascii: "[")]
        for (index, message) in messages.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += message.request.body
        }
        body.append(UInt8(ascii: "]"))
        let answer = await ProviderTransport.post(
            client,
            url: configuration.baseURL + "/--/api/v2/push/send",
            headers: headers,
            body: body,
            timeout: configuration.requestTimeout
        )
        switch answer {
        case .failure(let outcome):
            return Array(repeating: outcome, count: messages.count)
        case .success(let answer):
            let parsed = try? JSONParser().parse(answer.body)
            if answer.status != 200 {
                var code: String?
                if case .array(let errors)? = parsed?["errors"] { code = errors.first?["code"]?.stringValue }
                let outcome = Classification.expoRequest(
                    status: answer.status,
                    code: code,
                    retryAfter: answer.retryAfter
                )
                return Array(repeating: outcome, count: messages.count)
            }
            guard case .array(let tickets)? = parsed?["data"], tickets.count == messages.count else {
                let outcome = DeliveryOutcome.retry(
                    .init("expo.bad_answer", "Expo answered without one ticket per message")
                )
                return Array(repeating: outcome, count: messages.count)
            }
            return tickets.map(Self.outcome(of:))
        }
    }

    /// A ticket or receipt: `{"status": "ok", "id"?}` or `{"status": "error", "details": {"error"}}`.
    static func outcome(of entry: JSONValue) -> DeliveryOutcome {
        if entry["status"]?.stringValue == "ok" { return .delivered(receipt: entry["id"]?.stringValue) }
        return Classification.expo(
            error: entry["details"]?["error"]?.stringValue,
            message: entry["message"]?.stringValue
        )
    }

    /// The receipts Expo has for `ids`: `.delivered()` or the error's outcome. Ids without a receipt
    /// yet are absent; a failed request is the outcome for all of them.
    public func receipts(_ ids: [String]) async -> Result<[String: DeliveryOutcome], DeliveryOutcome> {
        var receipts: [String: DeliveryOutcome] = [:]
        for start in stride(from: 0, to: ids.count, by: Self.receiptsPerRequest) {
            var writer = JSONStreamWriter()
            writer.beginObject()
            writer.key("ids")
            writer.beginArray()
            for id in ids[start..<min(start + Self.receiptsPerRequest, ids.count)] {
                writer.element()
                writer.string(id)
            }
            writer.endArray()
            writer.endObject()
            let answer = await ProviderTransport.post(
                client,
                url: configuration.baseURL + "/--/api/v2/push/getReceipts",
                headers: headers,
                body: writer.bytes,
                timeout: configuration.requestTimeout
            )
            switch answer {
            case .failure(let outcome):
                return .failure(outcome)
            case .success(let answer):
                guard answer.status == 200, case .object(let data)? = (try? JSONParser().parse(answer.body))?["data"]
                else {
                    return .failure(
                        Classification.expoRequest(status: answer.status, code: nil, retryAfter: answer.retryAfter)
                    )
                }
                for (id, receipt) in data { receipts[id] = Self.outcome(of: receipt) }
            }
        }
        return .success(receipts)
    }

    public func shutdown() async {
        try? await client.shutdown()
    }
}
