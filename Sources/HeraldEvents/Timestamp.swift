/// A moment, as milliseconds since the Unix epoch (UTC).
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var epochMilliseconds: Int64

    public init(epochMilliseconds: Int64) {
        self.epochMilliseconds = epochMilliseconds
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.epochMilliseconds < rhs.epochMilliseconds }

    /// The earliest and latest moments RFC 3339 can write (`0000-01-01T00:00:00.000Z` and
    /// `9999-12-31T23:59:59.999Z`): its years have four digits.
    public static let representable =
        Timestamp(epochMilliseconds: -62_167_219_200_000)...Timestamp(epochMilliseconds: 253_402_300_799_999)

    /// Parses an RFC 3339 date-time (`2026-11-21T12:00:00Z`, `2026-11-21T13:00:00.250+01:00`).
    /// Returns `nil` for anything else, including impossible dates such as February 30 and moments
    /// that an offset moves out of ``representable`` (`0000-01-01T00:00:00+00:01`).
    public init?(rfc3339 text: String) {
        // A native string's bytes are read where they are; copying them into an array first was
        // an allocation for every event's time.
        let parsed =
            text.utf8.withContiguousStorageIfAvailable { Self.parse($0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { Self.parse($0) }
        guard let parsed else { return nil }
        self = parsed
    }

    /// ``init(rfc3339:)`` from the date-time's UTF-8.
    public init?(rfc3339 utf8: UnsafeRawBufferPointer) {
        guard let parsed = utf8.withMemoryRebound(to: UInt8.self, Self.parse) else { return nil }
        self = parsed
    }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-21T12:00:00.000Z`. A moment outside
    /// ``representable`` (made by arithmetic, not parsed) is written as the nearest end of it.
    public var description: String {
        String(unsafeUninitializedCapacity: Self.textLength) { write(to: UnsafeMutableRawBufferPointer($0)) }
    }

    /// The length of ``description``: always 24 bytes.
    static let textLength = 24

    /// `00` to `99`, each number's two digits at twice its offset.
    private static let digitPairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    /// Writes ``description`` into the first ``textLength`` bytes of `bytes`, two digits at a time: this
    /// runs for every outbound message, and a string this long is an allocation of its own.
    @discardableResult
    func write(to bytes: UnsafeMutableRawBufferPointer) -> Int {
        // A year below 0 would make a negative digit, which traps: an event timed a minute before
        // year 0 crashed the worker wherever its time was written.
        let clamped = min(max(self, Self.representable.lowerBound), Self.representable.upperBound)
        let (days, millisecondOfDay) = clamped.epochMilliseconds.floorDivided(by: 86_400_000)
        let (year, month, day) = Self.civil(fromDays: days)
        let second = millisecondOfDay / 1000
        precondition(bytes.count >= Self.textLength, "room for \(Self.textLength) bytes")
        let base = bytes.baseAddress!
        // Two digits at a time from a table: a division per pair instead of per digit, and no loop.
        let table = Self.digitPairs.utf8Start
        func pair(_ value: Int64, at offset: Int) {
            base.storeBytes(of: table[Int(value) &* 2], toByteOffset: offset, as: UInt8.self)
            base.storeBytes(of: table[Int(value) &* 2 &+ 1], toByteOffset: offset &+ 1, as: UInt8.self)
        }
        pair(year / 100, at: 0)
        pair(year % 100, at: 2)
        bytes[4] = UInt8(ascii: "-")
        pair(month, at: 5)
        bytes[7] = UInt8(ascii: "-")
        pair(day, at: 8)
        bytes[10] = UInt8(ascii: "T")
        pair(second / 3600, at: 11)
        bytes[13] = UInt8(ascii: ":")
        pair(second / 60 % 60, at: 14)
        bytes[16] = UInt8(ascii: ":")
        pair(second % 60, at: 17)
        bytes[19] = UInt8(ascii: ".")
        let millisecond = millisecondOfDay % 1000
        bytes[20] = UInt8(ascii: "0") &+ UInt8(millisecond / 100)
        pair(millisecond % 100, at: 21)
        bytes[23] = UInt8(ascii: "Z")
        return Self.textLength
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Timestamp? {
        var index = 0
        func digits(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for _ in 0..<count {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                index += 1
            }
            return value
        }
        func expect(_ characters: UInt8...) -> Bool {
            guard index < bytes.count, characters.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
            let day = digits(2), expect(UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")),
            let hour = digits(2), expect(UInt8(ascii: ":")), let minute = digits(2), expect(UInt8(ascii: ":")),
            let second = digits(2)
        else { return nil }
        var millisecond: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100
            var count = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                millisecond += Int64(bytes[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
                count += 1
            }
            guard count > 0 else { return nil }
        }
        var offsetMinutes: Int64 = 0
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHour = digits(2), expect(UInt8(ascii: ":")), let offsetMinute = digits(2),
                offsetHour < 24, offsetMinute < 60
            else { return nil }
            offsetMinutes = sign * (offsetHour * 60 + offsetMinute)
        default:
            return nil
        }
        guard index == bytes.count, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        // A leap second (:60) is folded into the next second.
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        let moment = Timestamp(epochMilliseconds: seconds * 1000 + millisecond)
        return representable.contains(moment) ? moment : nil
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPart = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPart + 2) / 5 + 1
        let month = monthPart < 10 ? monthPart + 3 : monthPart - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    /// Floor division and the non-negative remainder (for a positive `divisor`): the day, second
    /// or minute that holds a moment before 1970 too.
    @inlinable
    public func floorDivided(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = self / divisor
        let remainder = self % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
