import Foundation
import HeraldEvents
import Synchronization

/// A daily quiet period in the recipient's own time zone, e.g. 22:00 to 08:00 in Europe/Oslo. It may
/// wrap midnight, and is computed with the zone's rules, so it stays right across DST changes.
public struct QuietHours: Sendable, Hashable {
    /// Minutes after local midnight, 0..<1440, and never equal. Read-only like the zone: an hour past
    /// 23 set later would make ``endsAfter(_:)``'s calendar search find no date.
    public private(set) var start: Int
    public private(set) var end: Int
    /// An IANA time zone. Read-only, so that a period always holds a zone it can compute with:
    /// ``inTimeZone(_:)`` gives a period in another zone, or `nil` for a name that is not one.
    public private(set) var timeZone: String
    /// `timeZone`'s rules, found once: ``contains(_:)`` runs for every decision of a user who has
    /// quiet hours, and a calendar made for each (the zone looked up by name, then the date taken
    /// apart) cost about 4,000 instructions a call.
    private var zone: TimeZone

    /// - Parameters:
    ///   - start: `HH:mm`.
    ///   - end: `HH:mm`; before `start` means the period wraps midnight.
    /// - Returns: `nil` if a time or the zone is invalid, or start equals end.
    public init?(start: String, end: String, timeZone: String) {
        guard let startMinutes = Self.minutes(start), let endMinutes = Self.minutes(end) else { return nil }
        self.init(startMinute: startMinutes, endMinute: endMinutes, timeZone: timeZone)
    }

    /// The period from `startMinute` to `endMinute` after local midnight: how a store that packs
    /// the period reads it back, without printing and parsing `HH:mm`.
    ///
    /// - Returns: `nil` if a minute is outside 0..<1440, the two are equal, or the zone is invalid.
    package init?(startMinute: Int, endMinute: Int, timeZone: String) {
        guard (0..<1440).contains(startMinute), (0..<1440).contains(endMinute), startMinute != endMinute,
            let zone = Self.zone(named: timeZone)
        else { return nil }
        self.start = startMinute
        self.end = endMinute
        self.timeZone = timeZone
        self.zone = zone
    }

    /// The same period in the IANA zone `timeZone`, or `nil` if no zone has that name.
    public func inTimeZone(_ timeZone: String) -> QuietHours? {
        guard let zone = Self.zone(named: timeZone) else { return nil }
        var moved = self
        moved.timeZone = timeZone
        moved.zone = zone
        return moved
    }

    // Equal and hashed by what they say, not by the zone's rules found from it.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.start == rhs.start && lhs.end == rhs.end && lhs.timeZone == rhs.timeZone
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(start)
        hasher.combine(end)
        hasher.combine(timeZone)
    }

    /// The IANA zone named `name`, or `nil` if there is none. Zones found are kept: a user's quiet
    /// hours are made each time the directory cache reads them from the store, and Foundation's
    /// look-up by name cost about 8,800 instructions a time, more than the rest of decoding the
    /// user's record. Names that are no zone are not kept, so the table holds at most the zones
    /// the system knows (about 600).
    static func zone(named name: String) -> TimeZone? {
        if let known = zones.withLock({ $0[name] }) { return known }
        guard let zone = TimeZone(identifier: name) else { return nil }
        zones.withLock { $0[name] = zone }
        return zone
    }

    private static let zones = Mutex<[String: TimeZone]>([:])

    static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hour = Int(parts[0]),
            let minute = Int(parts[1]),
            (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return hour * 60 + minute
    }

    private var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }

    /// Whether `moment` falls within quiet hours (start inclusive, end exclusive), by local wall time.
    public func contains(_ moment: Timestamp) -> Bool {
        let minute = Self.minuteOfDay(moment, in: zone)
        return start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
    }

    /// The local wall time of `moment` in `zone`, in minutes after midnight (seconds dropped): the
    /// moment plus the zone's offset from UTC at that moment, so a DST change applies from the
    /// instant it happens.
    static func minuteOfDay(_ moment: Timestamp, in zone: TimeZone) -> Int {
        let second = moment.epochMilliseconds.floorDivided(by: 1000).quotient
        let offset = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(second)))
        let minute = (second + Int64(offset)).floorDivided(by: 60).quotient
        return Int(minute.floorDivided(by: 1440).remainder)
    }

    /// The first moment after `moment` at which quiet hours end: the next local `end` time. On a day
    /// when that wall time does not exist (clocks jump over it), the first moment after the jump.
    public func endsAfter(_ moment: Timestamp) -> Timestamp {
        // The calendar search costs microseconds and runs for every deferred notification. Its
        // answer for `from` holds for every moment from `from` up to the answer (no end lies in
        // between), so the last answer per quiet period is kept and reused.
        let at = moment.epochMilliseconds
        if let known = Self.recentEnds.withLock({ $0[self] }), known.from <= at, at < known.end {
            return Timestamp(epochMilliseconds: known.end)
        }
        let end = searchEnd(after: moment)
        Self.recentEnds.withLock { ends in
            if ends.count >= Self.recentEndsLimit { ends.removeAll(keepingCapacity: true) }
            ends[self] = (at, end.epochMilliseconds)
        }
        return end
    }

    /// The last ``endsAfter(_:)`` per quiet period: asked from, and answered.
    private static let recentEnds = Mutex<[QuietHours: (from: Int64, end: Int64)]>([:])
    /// Distinct quiet periods kept; a full table starts over.
    static let recentEndsLimit = 4096

    /// ``endsAfter(_:)`` searched for, without the kept answers.
    func searchEnd(after moment: Timestamp) -> Timestamp {
        let date = Date(timeIntervalSince1970: Double(moment.epochMilliseconds) / 1000)
        let next = calendar.nextDate(
            after: date,
            matching: DateComponents(hour: end / 60, minute: end % 60, second: 0),
            matchingPolicy: .nextTime
        )!
        return Timestamp(epochMilliseconds: Int64((next.timeIntervalSince1970 * 1000).rounded()))
    }
}

extension QuietHours {
    /// `start` as `HH:mm`.
    public var startText: String { Self.text(start) }
    /// `end` as `HH:mm`.
    public var endText: String { Self.text(end) }

    static func text(_ minutes: Int) -> String {
        let hour = minutes / 60
        let minute = minutes % 60
        return (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }
}
