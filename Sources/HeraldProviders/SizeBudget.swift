/// Fits a request into a provider's byte limit without ever producing an oversize request.
///
/// In order: the body is shortened at a grapheme boundary (never splitting an emoji or a
/// combining sequence) with an ellipsis, keeping at least ``minimumBodyGraphemes``; then optional
/// parts are dropped one at a time, in the order the builder lists them, each time trying the full
/// body and then a shortened one again; finally the body may shrink down to just the ellipsis. If
/// nothing fits, the result is ``ErrorCode/payloadTooLarge``.
enum SizeBudget {
    static let ellipsis = "…"
    static let minimumBodyGraphemes = 16

    /// The serialized request for `body` with the first `dropped` optional parts left out.
    typealias Build = (_ body: String, _ dropped: Int) -> [UInt8]

    /// The smallest change that makes the request fit `limit` bytes.
    ///
    /// - Parameters:
    ///   - optionalParts: how many parts may be dropped.
    static func fit(
        body: String,
        optionalParts: Int,
        limit: Int,
        what: String,
        build: Build
    ) throws(PayloadError) -> [UInt8] {
        for dropped in 0...optionalParts {
            let full = build(body, dropped)
            if full.count <= limit { return full }
            let minimum = min(minimumBodyGraphemes, body.count)
            if let shortened = longestFitting(
                body: body,
                atLeast: minimum,
                dropped: dropped,
                limit: limit,
                build: build
            ) {
                return shortened
            }
        }
        if let last = longestFitting(body: body, atLeast: 0, dropped: optionalParts, limit: limit, build: build) {
            return last
        }
        throw PayloadError(
            code: .payloadTooLarge,
            message: "\(what) exceeds \(limit) bytes even with the body shortened and optional fields dropped"
        )
    }

    /// Binary search for the longest grapheme prefix of `body` (plus an ellipsis) that fits.
    private static func longestFitting(
        body: String,
        atLeast minimum: Int,
        dropped: Int,
        limit: Int,
        build: Build
    ) -> [UInt8]? {
        let graphemes = Array(body)
        var low = minimum
        var high = graphemes.count - 1
        var best: [UInt8]?
        while low <= high {
            let middle = (low + high) / 2
            let candidate = build(String(graphemes[..<middle]) + ellipsis, dropped)
            if candidate.count <= limit {
                best = candidate
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        return best
    }

    /// The longest prefix of `text` that is at most `maximumBytes` of UTF-8 and ends at a grapheme
    /// boundary.
    static func prefix(_ text: String, maximumBytes: Int) -> String {
        var result = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            if bytes + size > maximumBytes { break }
            result.append(character)
            bytes += size
        }
        return result
    }
}
