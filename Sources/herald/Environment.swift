#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum Environment {
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

/// Writes a line to standard error.
func printError(_ line: String) {
    var standardError = StandardError()
    print(line, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        // Written with write(2) on descriptor 2: the C `stderr` global is not concurrency-safe.
        var text = string
        text.withUTF8 { bytes in _ = Glibc.write(2, bytes.baseAddress, bytes.count) }
    }
}
