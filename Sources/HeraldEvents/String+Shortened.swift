extension String {
    /// The longest prefix of at most `maximumBytes` of UTF-8 that ends at a grapheme boundary, so
    /// that an emoji, a flag or a letter with its combining marks is never split.
    public func graphemePrefix(maximumUTF8Bytes maximumBytes: Int) -> Substring {
        guard utf8.count > maximumBytes else { return self[...] }
        var end = startIndex
        while end < endIndex {
            let next = index(after: end)
            // A native string's index carries its UTF-8 offset: this distance is not a walk.
            if utf8.distance(from: startIndex, to: next) > maximumBytes { break }
            end = next
        }
        return self[..<end]
    }

    /// This text if it is at most `maximumBytes` of UTF-8, or else its longest grapheme prefix
    /// followed by `marker` that is.
    public func shortened(toUTF8Bytes maximumBytes: Int, marker: String = "…") -> String {
        guard utf8.count > maximumBytes else { return self }
        return String(graphemePrefix(maximumUTF8Bytes: max(0, maximumBytes - marker.utf8.count))) + marker
    }
}
