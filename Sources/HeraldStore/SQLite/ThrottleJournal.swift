import HeraldEvents
import HeraldPolicy

/// The notifications one transaction counted, as the one `throttle_journal` row it appends.
///
/// A row per counted notification cost a statement each, about as much as the decision's own
/// insert; a transaction's counts are only ever read back together, by ``ThrottleCounts/recover(_:)``.
///
/// Each entry is the window's start and end (milliseconds, 8 bytes each, little-endian), then its
/// rule and its recipient, each as a 4-byte little-endian length and UTF-8 bytes.
struct ThrottleJournal {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ key: ThrottleKey, windowEnd: Timestamp) {
        Self.append(key.windowStart.epochMilliseconds, to: &bytes)
        Self.append(windowEnd.epochMilliseconds, to: &bytes)
        Self.append(key.rule, to: &bytes)
        Self.append(key.recipient, to: &bytes)
        count += 1
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        count = 0
    }

    /// Calls `entry` with each window counted in a row's bytes, once per notification.
    static func forEach(
        in row: UnsafeRawBufferPointer,
        _ entry: (ThrottleKey, _ windowEnd: Timestamp) throws(StoreError) -> Void
    ) throws(StoreError) {
        var reader = Reader(bytes: row)
        while !reader.isAtEnd {
            guard let start = reader.integer(), let end = reader.integer(), let rule = reader.text(),
                let recipient = reader.text()
            else { throw StoreError(code: .storeQuery, message: "throttle_journal: a malformed entry") }
            try entry(
                ThrottleKey(recipient: recipient, rule: rule, windowStart: Timestamp(epochMilliseconds: start)),
                Timestamp(epochMilliseconds: end)
            )
        }
    }

    private static func append(_ value: Int64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func append(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: utf8)
        }
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var isAtEnd: Bool { offset >= bytes.count }

        mutating func integer() -> Int64? {
            guard bytes.count - offset >= 8 else { return nil }
            defer { offset += 8 }
            return Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self))
        }

        mutating func text() -> String? {
            guard bytes.count - offset >= 4 else { return nil }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            guard bytes.count - offset - 4 >= length else { return nil }
            defer { offset += 4 + length }
            return String(decoding: bytes[(offset + 4)..<(offset + 4 + length)], as: UTF8.self)
        }
    }
}
