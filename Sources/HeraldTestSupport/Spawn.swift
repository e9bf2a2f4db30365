import Glibc

/// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34): closes every descriptor from `lowest`
/// up in the child, at the moment it starts. Looked up at run time because Swift's Glibc module is
/// built without the feature macro that declares it. Listing the open descriptors beforehand and
/// closing each, as Foundation's `Process` does, misses one opened by another thread in between.
let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
        fatalError("posix_spawn_file_actions_addclosefrom_np is missing: glibc 2.34 or later is required")
    }
    return unsafeBitCast(
        symbol,
        to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self
    )
}()

/// Starts `command` with standard input, output and error, and `descriptor` of this process as its
/// descriptor 3; nothing else of this process. Returns its process id.
public func spawn(_ command: [String], passing descriptor: Int32) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, descriptor, 3)
    guard addCloseFrom(&actions, 4) == 0 else { throw SpawnError(errno: errno) }
    var arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
    defer { for argument in arguments { free(argument) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, command[0], &actions, nil, &arguments, environ)
    guard result == 0 else { throw SpawnError(errno: result) }
    return pid
}

/// A process could not be started.
public struct SpawnError: Error {
    public var errno: Int32
}

/// This process's descriptor of its end of the TCP connection (IPv4, loopback) from local port
/// `localPort` to peer port `peerPort`: found in `/proc/net/tcp` by its ports, then among
/// `/proc/self/fd` by its socket's inode.
public func socketDescriptor(localPort: Int, peerPort: Int) -> Int32? {
    guard let table = procFile("/proc/net/tcp") else { return nil }
    var inode: String?
    for line in table.split(separator: "\n").dropFirst() {
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
        let fields = line.split(separator: " ")
        guard fields.count > 9 else { continue }
        func port(_ address: Substring) -> Int? { address.split(separator: ":").last.flatMap { Int($0, radix: 16) } }
        if port(fields[1]) == localPort && port(fields[2]) == peerPort {
            inode = String(fields[9])
            break
        }
    }
    guard let inode, let directory = opendir("/proc/self/fd") else { return nil }
    defer { closedir(directory) }
    let target = "socket:[\(inode)]"
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard let descriptor = Int32(name) else { continue }
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/self/fd/\(name)", &buffer, buffer.count - 1)
        guard length > 0 else { continue }
        if String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) == target {
            return descriptor
        }
    }
    return nil
}

/// The text of a file under /proc, read to its end: such files report a size of 0, which readers
/// that size their buffer by it (Foundation's `String(contentsOfFile:)`) take for empty.
func procFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
