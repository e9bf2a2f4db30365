import HeraldEvents
import HeraldSimulator
import NIOCore
import NIOSSL
import Testing

@testable import HeraldSender

@Suite("HTTP/2 frame-level connection (work in progress)")
struct HTTP2FrameConnectionTests {
    @Test("requests on one connection get their own answers, concurrently; a dropped request fails alone")
    func concurrentRequests() async throws {
        try await SimulatorFixture.with(faults: try FaultProfile(parsing: "drop=0.2,seed=5")) { fixture in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [
                .certificates(try NIOSSLCertificate.fromPEMBytes(Array(fixture.authorityPEM.utf8)))
            ]
            let port = Int(fixture.baseURL.split(separator: ":").last!)!
            let connection = try await HTTP2FrameConnection.connect(host: "127.0.0.1", port: port, tls: tls)
            let token = try fixture.apnsKey.token(issuedAt: fixture.senderClock.now())
            let messages = try (0..<200).map {
                try SimulatorFixture.message(.apns, token: ProviderAnswerTests.apnsToken($0 + 1), id: "f-\($0)")
            }
            let results = await withTaskGroup(of: (Int, Result<HTTP2FrameConnection.Answer, any Error>).self) { group in
                for (index, message) in messages.enumerated() {
                    group.addTask {
                        let result = await Result {
                            try await connection.request(
                                path: message.request.path,
                                headers: [("authorization", "bearer \(token)")]
                                    + message.request.headers.map { ($0.name, $0.value) },
                                body: ByteBuffer(bytes: message.request.body),
                                deadline: .now() + .seconds(10)
                            )
                        }
                        return (index, result)
                    }
                }
                return await group.reduce(into: [Int: Result<HTTP2FrameConnection.Answer, any Error>]()) {
                    $0[$1.0] = $1.1
                }
            }
            var delivered = 0
            for (index, message) in messages.enumerated() {
                let apnsID = message.request.headers.first { $0.name == "apns-id" }!.value
                switch results[index]! {
                case .success(let answer):
                    #expect(answer.status == 200)
                    #expect(answer.headers.first(name: "apns-id") == apnsID)
                    #expect(fixture.simulator.acceptedCount(id: apnsID) == 1)
                    delivered += 1
                case .failure:
                    #expect(fixture.simulator.acceptedCount(id: apnsID) == 0)
                }
            }
            #expect(delivered == fixture.simulator.statistics.accepted)
            #expect(delivered > 100 && delivered < 200)
            #expect(connection.isActive, "a reset stream leaves the connection up")
            await connection.close()
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
