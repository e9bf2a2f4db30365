import CZlib

#if canImport(Glibc)
import Glibc
#endif

/// Writes a recorded log, gzip-compressed or plain: for benchmarks and tests that make logs.
public final class LogSink {
    public let path: String
    private var plain: UnsafeMutablePointer<FILE>?
    private var compressed: gzFile?

    /// - Throws: ``ReplayError`` `.cannotWrite` naming the file.
    public init(path: String, gzip: Bool) throws(ReplayError) {
        self.path = path
        if gzip {
            compressed = gzopen(path, "wb6")
            if compressed == nil { throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno))) }
        } else {
            plain = fopen(path, "wb")
            if plain == nil { throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno))) }
        }
    }

    deinit {
        try? close()
    }

    public func write(_ bytes: [UInt8]) throws(ReplayError) {
        guard !bytes.isEmpty else { return }
        let written: Int = bytes.withUnsafeBytes { buffer in
            if let compressed { return Int(gzwrite(compressed, buffer.baseAddress!, UInt32(buffer.count))) }
            if let plain { return fwrite(buffer.baseAddress!, 1, buffer.count, plain) }
            return 0
        }
        guard written == bytes.count else {
            throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
    }

    public func close() throws(ReplayError) {
        var failed = false
        if let compressed {
            failed = gzclose(compressed) != Z_OK
            self.compressed = nil
        }
        if let plain {
            failed = fclose(plain) != 0
            self.plain = nil
        }
        if failed { throw ReplayError.cannotWrite(path: path, reason: String(cString: strerror(errno))) }
    }
}
