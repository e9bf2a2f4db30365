import HeraldEvents

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

    /// Writes the serialized request for `body` with the first `dropped` optional parts left out.
    typealias Build = (_ writer: inout JSONStreamWriter, _ body: String, _ dropped: Int) -> Void

    /// Writes the request with the smallest change that makes it fit `limit` bytes into `writer`,
    /// after what is already there (a request built into the message that carries it).
    ///
    /// - Parameters:
    ///   - optionalParts: how many parts may be dropped.
    /// - Returns: the request's size in bytes.
    @discardableResult
    static func write(
        body: String,
        optionalParts: Int,
        limit: Int,
        what: String,
        into writer: inout JSONStreamWriter,
        build: Build
    ) throws(PayloadError) -> Int {
        let start = writer.count
        for dropped in 0...optionalParts {
            build(&writer, body, dropped)
            let size = writer.count - start
            if size <= limit { return size }
            writer.truncate(to: start)
            let minimum = min(minimumBodyGraphemes, body.count)
            if let shortened = longestFitting(
                body: body,
                atLeast: minimum,
                dropped: dropped,
                limit: limit,
                build: build
            ) {
                build(&writer, shortened, dropped)
                return writer.count - start
            }
        }
        if let last = longestFitting(body: body, atLeast: 0, dropped: optionalParts, limit: limit, build: build) {
            build(&writer, last, optionalParts)
            return writer.count - start
        }
        throw PayloadError(
            code: .payloadTooLarge,
            message: "\(what) exceeds \(limit) bytes even with the body shortened and optional fields dropped"
        )
    }

    /// Binary search for the longest grapheme prefix of `body` (plus an ellipsis) that fits: the
    /// shortened body, or `nil` if not even the shortest does.
    private static func longestFitting(
        body: String,
        atLeast minimum: Int,
        dropped: Int,
        limit: Int,
        build: Build
    ) -> String? {
        let graphemes = Array(body)
        var low = minimum
        var high = graphemes.count - 1
        var best: String?
        // Candidates are measured in a scratch writer of their own.
        var scratch = JSONStreamWriter(capacity: limit + 256)
        while low <= high {
            let middle = (low + high) / 2
            let candidate = String(graphemes[..<middle]) + ellipsis
            scratch.truncate(to: 0)
            build(&scratch, candidate, dropped)
            if scratch.count <= limit {
                best = candidate
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        return best
    }
}
