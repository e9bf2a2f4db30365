import Foundation
import HeraldCatalog
import HeraldEvents
import HeraldPolicy
import HeraldWorker
import Testing

@testable import HeraldApp

/// The decoders of what Herald reads from Kafka, fed mutated copies of valid records: each must
/// return a value or throw its error (a crash would take the worker or sender down with every
/// redelivery of the record), and what it returns must survive being written and read again.
@Suite("Decoders under mutated input")
struct DecoderFuzzTests {
    /// The same mutations on every run, so a failure can be replayed.
    typealias Generator = SeededRandom

    /// Bytes that change JSON's structure when they land in the wrong place.
    static let significant = Array(#"{}[]",:\-+.0123456789eEtrufalsn "#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xED, 0xFF]

    /// `bytes` with one to four random edits: a byte replaced, a run deleted or repeated, a cut.
    static func mutated(_ bytes: [UInt8], _ random: inout Generator) -> [UInt8] {
        var result = bytes
        for _ in 0..<Int.random(in: 1...4, using: &random) where !result.isEmpty {
            let at = Int.random(in: 0..<result.count, using: &random)
            switch Int.random(in: 0..<5, using: &random) {
            case 0: result[at] = significant.randomElement(using: &random)!
            case 1: result[at] = UInt8.random(in: 0...255, using: &random)
            case 2: result.removeSubrange(at..<min(result.count, at + Int.random(in: 1...8, using: &random)))
            case 3:
                let run = result[at..<min(result.count, at + Int.random(in: 1...16, using: &random))]
                result.insert(contentsOf: run, at: at)
            default: result.removeSubrange(at...)
            }
        }
        return result
    }

    @Test("outbound messages: a mutation is read or refused with a reason, and what is read round-trips")
    func outboundMessages() throws {
        var random = Generator(seed: 0x4845_5241_4C44)
        let valid = OutboundMessageTests.message().encoded()
        var (read, refused) = (0, 0)
        for _ in 0..<20_000 {
            let bytes = Self.mutated(valid, &random)
            do {
                let message = try OutboundMessage(decoding: bytes)
                read += 1
                #expect(try OutboundMessage(decoding: message.encoded()) == message)
            } catch {
                refused += 1
                #expect(!error.message.isEmpty)
            }
        }
        // Both kinds of outcome occur: the mutations reach past the first byte.
        #expect(read > 100 && refused > 100, "read \(read), refused \(refused)")
    }

    @Test("events and directory events: a mutation is decoded or refused with a code")
    func events() throws {
        var random = Generator(seed: 0x4556_454E_5453)
        let samples = [
            #"{"specversion":"1.0","id":"e-1","source":"/orders","type":"order.confirmed","time":"2026-11-21T12:00:00.250+01:00","datacontenttype":"application/json","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","data":{"userId":"u-1","orderId":"ord-7","total":{"amount":1234.50,"currency":"NOK"},"itemCount":3,"items":[{"sku":"a"},null,true,-1e3]}}"#,
            #"{"specversion":"1.0","id":"d-1","source":"/accounts","type":"user.preferences.updated","time":"2026-11-21T12:00:00Z","data":{"userId":"u-1","pushEnabled":true,"categories":{"marketing":{"push":false,"email":true}},"quietHours":{"enabled":true,"start":"22:00","end":"07:00","timezone":"Europe/Oslo"}}}"#,
            #"{"specversion":"1.0","id":"d-2","source":"/accounts","type":"device.registered","time":"2026-11-21T12:00:00Z","data":{"userId":"u-1","deviceId":"d","platform":"ios","provider":"apns","token":"abab","appId":"no.getdrop.app","environment":"sandbox","locale":"nb-NO"}}"#,
        ].map { Array($0.utf8) }
        var (decoded, refused) = (0, 0)
        for round in 0..<30_000 {
            let bytes = Self.mutated(samples[round % samples.count], &random)
            do {
                let event = try EventDecoder().decode(value: bytes)
                decoded += 1
                // A directory event is read or refused with its reason; either way, no trap.
                _ = try? DirectoryEvent(event)
                _ = event.time?.description
            } catch {
                refused += 1
                #expect(!error.code.name.isEmpty && !error.message.isEmpty)
            }
        }
        #expect(decoded > 100 && refused > 100, "decoded \(decoded), refused \(refused)")
    }
}
