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
        /// How long connecting to Expo may take.
        public var connectTimeout = Duration.seconds(5)
        public var concurrency = 8

        public init() {}
    }

    /// The longest ticket id whose receipt is read.
    static let maximumTicketBytes = 256

    /// Expo's limits per request.
    public static let messagesPerRequest = 100
    public static let receiptsPerRequest = 1000

    let configuration: Configuration
    let client: HTTPClient
    let limiter: ConcurrencyLimiter

    public init(configuration: Configuration, extraTrustRootsPEM: String?) throws {
        self.configuration = configuration
        client = try ProviderTransport.makeClient(
            extraTrustRootsPEM: extraTrustRootsPEM,
            connectTimeout: configuration.connectTimeout
        )
        limiter = ConcurrencyLimiter(limit: configuration.concurrency)
    }

    private var headers: [(String, String)] {
        [("content-type", "application/json"), ("accept", "application/json")]
            + (configuration.accessToken.map { [("authorization", "Bearer \($0)")] } ?? [])
    }

    /// One outcome per message, in order: `.delivered(receipt: ticketID)` for a ticket that was
    /// accepted (its receipt still to come).
    ///
    /// Expo refuses a whole request whose tokens belong to more than one Expo project
    /// (`PUSH_TOO_MANY_EXPERIENCE_IDS`): messages go in requests by app, and a request refused so
    /// anyway (an app's development builds registered under several projects) is sent again split
    /// by the projects Expo names.
    public func send(_ messages: [OutboundMessage]) async -> [DeliveryOutcome] {
        var byApp: [String: [Int]] = [:]
        var apps: [String] = []
        for (index, message) in messages.enumerated() {
            if byApp[message.app] == nil { apps.append(message.app) }
            byApp[message.app, default: []].append(index)
        }
        var outcomes = [DeliveryOutcome?](repeating: nil, count: messages.count)
        await withTaskGroup(of: [(Int, DeliveryOutcome)].self) { group in
            for app in apps {
                let indices = byApp[app]!
                for start in stride(from: 0, to: indices.count, by: Self.messagesPerRequest) {
                    let chunk = Array(indices[start..<min(start + Self.messagesPerRequest, indices.count)])
                    group.addTask {
                        let answered = await self.sendSplittingProjects(chunk.map { messages[$0] })
                        return Array(zip(chunk, answered))
                    }
                }
            }
            for await answered in group {
                for (index, outcome) in answered { outcomes[index] = outcome }
            }
        }
        return outcomes.map { $0! }
    }

    /// Sends one request of `messages`; if Expo refuses it for mixing projects, sends one request
    /// per project it names (and one of any messages it does not), once.
    private func sendSplittingProjects(_ messages: [OutboundMessage]) async -> [DeliveryOutcome] {
        let (outcomes, projects) = await limiter.withPermit { await self.sendChunk(messages) }
        guard let projects else { return outcomes }
        var groups: [[Int]] = []
        var placed = Set<Int>()
        for tokens in projects {
            let group = messages.indices.filter { !placed.contains($0) && tokens.contains(messages[$0].token) }
            placed.formUnion(group)
            if !group.isEmpty { groups.append(group) }
        }
        let rest = messages.indices.filter { !placed.contains($0) }
        if !rest.isEmpty { groups.append(rest) }
        // A split that leaves the request whole would only be refused again.
        guard groups.count > 1 else { return outcomes }
        var split = outcomes
        await withTaskGroup(of: [(Int, DeliveryOutcome)].self) { tasks in
            for group in groups {
                tasks.addTask {
                    let (answered, _) = await self.limiter.withPermit {
                        await self.sendChunk(group.map { messages[$0] })
                    }
                    return Array(zip(group, answered))
                }
            }
            for await answered in tasks {
                for (index, outcome) in answered { split[index] = outcome }
            }
        }
        return split
    }

    /// Expo's code for a request whose tokens belong to several Expo projects; its `details` map
    /// each project to its tokens.
    static let tooManyProjects = "PUSH_TOO_MANY_EXPERIENCE_IDS"

    /// One request: an outcome per message, and the tokens of each project if Expo refused the
    /// request for mixing projects.
    private func sendChunk(_ messages: [OutboundMessage]) async -> ([DeliveryOutcome], projects: [Set<String>]?) {
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
            return (Array(repeating: outcome, count: messages.count), nil)
        case .success(let answer):
            let parsed = try? JSONParser().parse(answer.body)
            if answer.status != 200 {
                var code: String?
                var projects: [Set<String>]?
                if case .array(let errors)? = parsed?["errors"], let error = errors.first {
                    code = error["code"]?.stringValue
                    if code == Self.tooManyProjects, case .object(let details)? = error["details"] {
                        projects = details.map { _, tokens in
                            guard case .array(let tokens) = tokens else { return [] }
                            return Set(tokens.compactMap(\.stringValue))
                        }
                    }
                }
                let outcome = Classification.expoRequest(
                    status: answer.status,
                    code: code,
                    retryAfter: answer.retryAfter
                )
                return (Array(repeating: outcome, count: messages.count), projects)
            }
            guard case .array(let tickets)? = parsed?["data"], tickets.count == messages.count else {
                let outcome = DeliveryOutcome.retry(
                    .init("expo.bad_answer", "Expo answered without one ticket per message")
                )
                return (Array(repeating: outcome, count: messages.count), nil)
            }
            return (tickets.map(Self.outcome(of:)), nil)
        }
    }

    /// A ticket or receipt: `{"status": "ok", "id"?}` or `{"status": "error", "details": {"error"}}`.
    static func outcome(of entry: JSONValue) -> DeliveryOutcome {
        if entry["status"]?.stringValue == "ok" {
            // A ticket id is kept in the ledger until its receipt is read, as the key of its row:
            // one that no store could keep (Expo's are UUIDs) is not waited for.
            let ticket = entry["id"]?.stringValue.flatMap { id in
                id.utf8.count <= Self.maximumTicketBytes && !id.utf8.contains(0) ? id : nil
            }
            return .delivered(receipt: ticket)
        }
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
