#if canImport(Glibc)
import Glibc
#endif

/// Which `malloc` this process runs on. The `herald` executable links jemalloc unless it was built
/// without the package's `Jemalloc` trait; start-up logs and benchmark reports say which, since the
/// allocator moves the worker's CPU per event by a tenth (docs/benchmarks.md, "Allocator").
public enum MemoryAllocator {
    /// "jemalloc 5.3.0" when jemalloc serves the process's `malloc`, else the C library's
    /// ("glibc 2.36"), else "the C library's malloc".
    public static let description: String = jemallocVersion.map { "jemalloc \($0)" } ?? systemDescription

    /// jemalloc's version without its git suffix ("5.3.0"), from its `mallctl("version")`, or `nil`.
    /// `mallctl` is looked up among the process's loaded libraries rather than linked against, so
    /// code in a process without jemalloc (the test runner) asks the same question and gets `nil`.
    private static let jemallocVersion: String? = {
        #if canImport(Glibc)
        typealias MallCtl =
            @convention(c) (
                UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?,
                Int
            ) -> Int32
        // A null handle is RTLD_DEFAULT: the global scope, where an executable's libraries are.
        guard let symbol = dlsym(nil, "mallctl") else { return nil }
        let mallctl = unsafeBitCast(symbol, to: MallCtl.self)
        var version: UnsafePointer<CChar>? = nil
        var length = MemoryLayout<UnsafePointer<CChar>?>.size
        let status = withUnsafeMutablePointer(to: &version) { mallctl("version", $0, &length, nil, 0) }
        guard status == 0, let version else { return nil }
        // "5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c": the release, then the commit.
        return String(cString: version).split(separator: "-").first.map(String.init)
        #else
        return nil
        #endif
    }()

    private static var systemDescription: String {
        #if canImport(Glibc)
        // "glibc 2.36"
        var buffer = [CChar](repeating: 0, count: 64)
        let length = confstr(Int32(_CS_GNU_LIBC_VERSION), &buffer, buffer.count)
        if length > 0, length <= buffer.count {
            return String(decoding: buffer.prefix(length - 1).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        #endif
        return "the C library's malloc"
    }
}
