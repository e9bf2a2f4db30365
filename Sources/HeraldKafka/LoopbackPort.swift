#if canImport(Glibc)
import Glibc
#endif

/// Free TCP ports on 127.0.0.1, for the servers Herald's tools and tests start beside the embedded
/// broker (a throwaway PostgreSQL cluster, the `/metrics` ports of benchmark processes).
package enum LoopbackPort {
    /// A port nothing listens on now: bound to 127.0.0.1:0, read back, released. Another process
    /// may take it before the caller does; callers start their server at once.
    ///
    /// - Returns: `nil` when no socket could be opened or bound.
    package static func unused() -> Int? {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return nil }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}
