import Foundation
import HeraldEvents
import Testing

@testable import HeraldApp

@Suite("The benchmarks' event generator")
struct EventGeneratorTests {
    @Test("a writer kept from event to event writes each event as a fresh one does, ids digit for digit")
    func reusedWriter() throws {
        let generator = EventGenerator(users: 100_000, partitions: 12)
        let time = Timestamp(epochMilliseconds: 1_795_000_000_000)
        var json = JSONStreamWriter(capacity: 16)
        for number in [0, 1, 9, 10, 99, 100, 996, 997, 12_345, 999_999, 1_000_000, Int(Int32.max)] + Array(0..<300) {
            var (key, value) = ([UInt8](), [UInt8]())
            let partition = generator.write(number, time: time, key: &key, value: &value)
            var (reusedKey, reusedValue) = ([UInt8](), [UInt8]())
            let reusedPartition = generator.write(
                number,
                time: time,
                key: &reusedKey,
                value: &reusedValue,
                using: &json
            )
            #expect(reusedKey == key && reusedValue == value && reusedPartition == partition)
            let event = try EventDecoder().decode(value: value)
            // The ids' numbers as the interpolated strings the generator wrote before.
            #expect(event.id == "bench-\(number)")
            #expect(String(decoding: key, as: UTF8.self).hasPrefix("u-"))
            let user = Int(String(decoding: key.dropFirst(2), as: UTF8.self))
            #expect(user.map { EventGenerator.userID($0) } == String(decoding: key, as: UTF8.self))
            if let order = event.data?["orderId"]?.stringValue { #expect(order == "ord-\(number)") }
            if let chat = event.data?["chatId"]?.stringValue { #expect(chat == "chat-\(number % 997)") }
        }
    }

    @Test(
        "untimed events carry no `time` unless given one; random ids are version 4 UUIDs, the same for an event in every run"
    )
    func untimedRandomIDs() throws {
        var generator = EventGenerator(users: 1000, partitions: 4)
        generator.untimed = true
        generator.randomIDs = true
        var ids: Set<String> = []
        for number in 0..<200 {
            var (key, value) = ([UInt8](), [UInt8]())
            _ = generator.write(number, key: &key, value: &value)
            let event = try EventDecoder().decode(value: value)
            #expect(event.time == nil)
            let id = event.id
            #expect(id.count == 36 && Array(id)[14] == "4" && "89ab".contains(Array(id)[19]), "\(id)")
            #expect(UUID(uuidString: id) != nil, "\(id)")
            ids.insert(id)
            var (againKey, again) = ([UInt8](), [UInt8]())
            _ = generator.write(number, key: &againKey, value: &again)
            #expect(try EventDecoder().decode(value: again).id == id)
            let time = Timestamp(epochMilliseconds: 1_795_000_000_000)
            _ = generator.write(number, time: time, key: &againKey, value: &again)
            #expect(try EventDecoder().decode(value: again).time == time)
        }
        #expect(ids.count == 200)
    }

    @Test(
        "the events are the same byte for byte from one build to the next, so that benchmark figures stay comparable"
    )
    func sameBytes() {
        // A digest of every key, value and partition of the first events of each mode, taken when
        // the generator was last rewritten: a change to what it writes fails here, a change to how
        // it writes them does not. A deliberate change of the events takes the new digests from
        // the failure's message, and says in docs/benchmarks.md that figures before it differ.
        func digest(_ generator: EventGenerator, _ numbers: Range<Int>, time: Timestamp?) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            func add(_ bytes: some Sequence<UInt8>) {
                for byte in bytes {
                    hash ^= UInt64(byte)
                    hash &*= 0x0000_0100_0000_01B3
                }
            }
            var json = JSONStreamWriter(capacity: 16)
            for number in numbers {
                var (key, value) = ([UInt8](), [UInt8]())
                let partition = generator.write(number, time: time, key: &key, value: &value, using: &json)
                add(key)
                add(value)
                add(withUnsafeBytes(of: partition.littleEndian) { Array($0) })
            }
            return hash
        }
        let time = Timestamp(epochMilliseconds: 1_795_000_000_123)
        let timed = digest(EventGenerator(users: 100_000, partitions: 12), 0..<5000, time: time)
        var untimed = EventGenerator(users: 1000, partitions: 4)
        untimed.untimed = true
        untimed.randomIDs = true
        let random = digest(untimed, 999_000..<1_001_000, time: nil)
        #expect(timed == 0x5823_716b_241f_c6de, "timed: \(String(timed, radix: 16))")
        #expect(random == 0xc9b4_57a0_6c03_ba14, "random ids: \(String(random, radix: 16))")
    }
}
