/// A small deterministic random number generator (SplitMix64): a seed gives the same sequence on
/// every machine and every run, so a benchmark decides the same pairs, a simulated provider fails
/// the same requests, and a failing property test can be replayed from its seed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` by the remainder: a bias too small to matter to a test, and a sequence
    /// that does not depend on how the standard library draws from a range.
    public mutating func next(below bound: Int) -> Int {
        precondition(bound > 0, "a bound of at least 1")
        return Int(next() % UInt64(bound))
    }

    /// The first value of a generator seeded with `seed`: a well-mixed hash of a number.
    public static func first(seed: UInt64) -> UInt64 {
        var random = SeededRandom(seed: seed)
        return random.next()
    }
}
