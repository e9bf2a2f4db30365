import Foundation
import HeraldEvents

/// How often the simulator misbehaves, and how slowly it answers. Faults apply to send requests
/// that would otherwise succeed, so a test can tell a fault from a bad request.
public struct FaultProfile: Sendable, Equatable, CustomStringConvertible {
    /// Share of sends answered 500 (APNs `InternalServerError`, FCM `INTERNAL`, Expo `INTERNAL_SERVER_ERROR`).
    public var internalErrorRate = 0.0
    /// Share answered 503 (`ServiceUnavailable`, `UNAVAILABLE`).
    public var unavailableRate = 0.0
    /// Share answered 429 (`TooManyRequests`, `QUOTA_EXCEEDED`, `TOO_MANY_REQUESTS`), with
    /// `Retry-After: retryAfterSeconds` where the provider sends one (FCM, Expo).
    public var tooManyRequestsRate = 0.0
    public var retryAfterSeconds = 1
    /// Share answered as if the token had just been unregistered (APNs 410 `Unregistered` with a
    /// timestamp, FCM 404 `UNREGISTERED`, Expo `DeviceNotRegistered`).
    public var unregisteredRate = 0.0
    /// Share of sends dropped without an answer (the HTTP/2 stream reset, an HTTP/1.1 connection closed).
    public var dropConnectionRate = 0.0
    /// Answer latency: log-normal with this median and 99th percentile (both 0: answer at once).
    public var latencyMedianMilliseconds = 0.0
    public var latencyP99Milliseconds = 0.0
    /// Seed of the fault dice, so a run can be repeated.
    public var seed: UInt64 = 1

    public init() {}

    /// No faults, no latency.
    public static let none = FaultProfile()

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Reads `500=0.1,503=0.02,429=0.05,410=0.001,drop=0.01,retry-after=2,latency=5ms..40ms,seed=7`:
    /// any subset, in any order; `latency=MEDIAN..P99`.
    public init(parsing text: String) throws(ParseError) {
        for item in text.split(separator: ",") where !item.isEmpty {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { throw ParseError(description: "fault profile: '\(item)' is not NAME=VALUE") }
            let (name, value) = (parts[0], parts[1])
            func rate() throws(ParseError) -> Double {
                guard let rate = Double(value), (0...1).contains(rate) else {
                    throw ParseError(description: "fault profile: \(name) must be a rate from 0 to 1, got '\(value)'")
                }
                return rate
            }
            switch name {
            case "500": internalErrorRate = try rate()
            case "503": unavailableRate = try rate()
            case "429": tooManyRequestsRate = try rate()
            case "410": unregisteredRate = try rate()
            case "drop": dropConnectionRate = try rate()
            case "retry-after":
                guard let seconds = Int(value), seconds >= 0 else {
                    throw ParseError(description: "fault profile: retry-after must be whole seconds, got '\(value)'")
                }
                retryAfterSeconds = seconds
            case "latency":
                let bounds = value.components(separatedBy: "..")
                guard bounds.count == 2, let median = Self.milliseconds(bounds[0]),
                    let p99 = Self.milliseconds(bounds[1]),
                    median >= 0, p99 >= median
                else {
                    throw ParseError(
                        description: "fault profile: latency must be MEDIAN..P99 such as 5ms..40ms, got '\(value)'"
                    )
                }
                latencyMedianMilliseconds = median
                latencyP99Milliseconds = p99
            case "seed":
                guard let seed = UInt64(value) else {
                    throw ParseError(description: "fault profile: seed must be a whole number, got '\(value)'")
                }
                self.seed = seed
            default:
                throw ParseError(
                    description:
                        "fault profile: unknown fault '\(name)' (known: 500, 503, 429, 410, drop, retry-after, latency, seed)"
                )
            }
        }
        let total = internalErrorRate + unavailableRate + tooManyRequestsRate + unregisteredRate + dropConnectionRate
        guard total <= 1 else { throw ParseError(description: "fault profile: the rates add up to more than 1") }
    }

    private static func milliseconds(_ text: String) -> Double? {
        if text.hasSuffix("ms") { return Double(text.dropLast(2)) }
        if text.hasSuffix("s") { return Double(text.dropLast()).map { $0 * 1000 } }
        return Double(text)
    }

    public var description: String {
        "500=\(internalErrorRate),503=\(unavailableRate),429=\(tooManyRequestsRate),410=\(unregisteredRate),"
            + "drop=\(dropConnectionRate),retry-after=\(retryAfterSeconds),"
            + "latency=\(latencyMedianMilliseconds)ms..\(latencyP99Milliseconds)ms,seed=\(seed)"
    }
}

/// What the dice said for one send.
enum Fault: Equatable {
    case internalError, unavailable, tooManyRequests, unregistered, dropConnection
}

/// The fault dice, seeded from the profile: the same requests fail on every run.
struct FaultDice {
    private var random: SeededRandom
    let profile: FaultProfile

    init(profile: FaultProfile) {
        self.profile = profile
        random = SeededRandom(seed: profile.seed)
    }

    /// A uniform number in [0, 1).
    private mutating func uniform() -> Double { Double(random.next() >> 11) / Double(1 << 53) }

    /// The fault for one request, if any. `perMessage: false` leaves out the unregistered-device
    /// fault, for requests that carry many devices (Expo), whose devices roll it one by one.
    mutating func roll(perMessage: Bool = true) -> Fault? {
        var point = uniform()
        for (rate, fault) in [
            (profile.dropConnectionRate, Fault.dropConnection), (profile.internalErrorRate, .internalError),
            (profile.unavailableRate, .unavailable), (profile.tooManyRequestsRate, .tooManyRequests),
            (perMessage ? profile.unregisteredRate : 0, .unregistered),
        ] {
            if point < rate { return fault }
            point -= rate
        }
        return nil
    }

    /// True with probability `rate`.
    mutating func chance(_ rate: Double) -> Bool { uniform() < rate }

    /// The next answer's latency in nanoseconds: log-normal through the profile's median and p99.
    mutating func latencyNanoseconds() -> Int64 {
        let median = profile.latencyMedianMilliseconds
        guard median > 0 else { return 0 }
        // 2.326 is the standard normal's 99th percentile; Box–Muller gives the normal draw.
        let sigma = max(profile.latencyP99Milliseconds / median, 1).logarithm / 2.326
        let normal = (-2 * max(uniform(), 1e-12).logarithm).squareRoot() * (2 * Double.pi * uniform()).cosine
        return Int64(median * (sigma * normal).exponential * 1_000_000)
    }
}

extension Double {
    fileprivate var logarithm: Double { Foundation.log(self) }
    fileprivate var exponential: Double { Foundation.exp(self) }
    fileprivate var cosine: Double { Foundation.cos(self) }
}
