/// Appends values to a byte array in the small packed format Herald's SQLite blobs use: integers
/// as 8 bytes and lengths as 4 bytes, little-endian; text as its length and UTF-8 bytes.
struct PackedWriter {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: utf8)
        }
    }

    /// A flag byte, then the text if there is one.
    mutating func append(_ text: String?) {
        guard let text else { return append(UInt8(0)) }
        append(UInt8(1))
        append(text)
    }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Reads what a ``PackedWriter`` wrote; every read answers `nil` when the bytes run out.
struct PackedReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func integer() -> Int64? {
        guard bytes.count - offset >= 8 else { return nil }
        defer { offset += 8 }
        return Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self))
    }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A byte that is 0 or 1; `nil` for any other.
    mutating func flag() -> Bool? {
        switch byte() {
        case 0: false
        case 1: true
        default: nil
        }
    }

    mutating func text() -> String? {
        guard bytes.count - offset >= 4 else { return nil }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        guard bytes.count - offset - 4 >= length else { return nil }
        defer { offset += 4 + length }
        return String(
            decoding: UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 4 + length)]),
            as: UTF8.self
        )
    }

    /// What ``PackedWriter/append(_:)-(String?)`` wrote: `.some(nil)` for an absent text, `nil` when
    /// the bytes are malformed.
    mutating func optionalText() -> String?? {
        switch byte() {
        case 0: return .some(nil)
        case 1: return text().map { .some($0) }
        default: return nil
        }
    }
}
