import CZlib

#if canImport(Glibc)
import Glibc
#endif

/// Reads a file one line at a time through a fixed buffer, gunzipping it if it is gzip (zlib reads
/// an uncompressed file as it is): a recorded log or a directory snapshot of any size is streamed,
/// never loaded whole.
public final class LineReader {
    public let path: String
    private let file: gzFile
    private var buffer: [UInt8]
    /// `buffer[start..<end]` has been read and not yet handed out.
    private var start = 0
    private var end = 0
    private var exhausted = false
    /// The rest of a line longer than ``maximumLineBytes`` is being passed over.
    private var skipping = false
    /// The number of the last line handed out, from 1.
    public private(set) var lineNumber = 0
    /// The most of one line held: a longer line is handed out cut to one byte more than this, and
    /// the rest passed over. A file that is not a log (a binary, a gzip bomb) would otherwise be
    /// held whole in memory while its first line break is looked for; the worker dead-letters the
    /// cut line as `event.oversize`, as it would the whole one.
    public let maximumLineBytes: Int

    /// - Throws: ``ReplayError`` `.cannotRead` naming the file.
    public init(path: String, bufferSize: Int = 1 << 20, maximumLineBytes: Int = 16 << 20) throws(ReplayError) {
        guard let file = gzopen(path, "rb") else {
            throw ReplayError.cannotRead(path: path, reason: String(cString: strerror(errno)))
        }
        gzbuffer(file, UInt32(bufferSize))
        self.path = path
        self.file = file
        self.buffer = [UInt8](repeating: 0, count: bufferSize)
        self.maximumLineBytes = maximumLineBytes
    }

    deinit {
        gzclose(file)
    }

    /// Calls `body` with the next line, without its line break (`\n` or `\r\n`), or returns `nil`
    /// at the end of the file. The bytes are valid only during the call.
    ///
    /// - Throws: ``ReplayError`` `.cannotRead` for a read error or a corrupt gzip stream.
    public func nextLine<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        while true {
            if skipping {
                if let newline = firstNewline() {
                    start = newline + 1
                    skipping = false
                } else {
                    start = end
                    if exhausted { return nil }
                    try fill()
                    continue
                }
            }
            if let newline = firstNewline() {
                var lineEnd = newline
                if lineEnd > start && buffer[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
                let lineStart = start
                start = newline + 1
                lineNumber += 1
                return try buffer.withUnsafeBytes {
                    try body(UnsafeRawBufferPointer(rebasing: $0[lineStart..<lineEnd]))
                }
            }
            if exhausted {
                guard start < end else { return nil }
                // The last line has no line break.
                let lineStart = start
                let lineEnd = end
                start = end
                lineNumber += 1
                return try buffer.withUnsafeBytes {
                    try body(UnsafeRawBufferPointer(rebasing: $0[lineStart..<lineEnd]))
                }
            }
            if end - start > maximumLineBytes {
                let lineStart = start
                start = end
                skipping = true
                lineNumber += 1
                return try buffer.withUnsafeBytes {
                    try body(UnsafeRawBufferPointer(rebasing: $0[lineStart..<(lineStart + maximumLineBytes + 1)]))
                }
            }
            try fill()
        }
    }

    private func firstNewline() -> Int? {
        guard start < end else { return nil }
        return buffer.withUnsafeBytes { bytes -> Int? in
            guard let found = memchr(bytes.baseAddress! + start, Int32(UInt8(ascii: "\n")), end - start) else {
                return nil
            }
            return UnsafeRawPointer(found) - bytes.baseAddress!
        }
    }

    /// Moves the unread rest to the front (growing the buffer for a line longer than it) and reads
    /// more after it.
    private func fill() throws(ReplayError) {
        if start > 0 {
            let rest = end - start
            if rest > 0 {
                buffer.withUnsafeMutableBytes { bytes in
                    _ = memmove(bytes.baseAddress!, bytes.baseAddress! + start, rest)
                }
            }
            start = 0
            end = rest
        }
        if end == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
        let room = buffer.count - end
        let read = buffer.withUnsafeMutableBytes { bytes in
            gzread(file, bytes.baseAddress! + end, UInt32(room))
        }
        if read < 0 {
            var code: Int32 = 0
            let message = gzerror(file, &code).map { String(cString: $0) } ?? "read error"
            throw ReplayError.cannotRead(path: path, reason: message)
        }
        if read == 0 {
            // gzread returns 0 both at the end and for a truncated gzip stream; zlib tells them apart.
            var code: Int32 = 0
            if let message = gzerror(file, &code), code != Z_OK && code != Z_STREAM_END {
                throw ReplayError.cannotRead(path: path, reason: String(cString: message))
            }
            exhausted = true
        }
        end += Int(read)
    }
}
