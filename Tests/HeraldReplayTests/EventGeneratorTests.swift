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
}
