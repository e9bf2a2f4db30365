import Synchronization

/// Buffers of one size, kept when they are given back and handed out again: the worker's outbound
/// records are written into buffers on its build threads and freed on the producer's delivery
/// thread when their last record is acknowledged. Allocated on one thread and freed on another,
/// each 12 KiB buffer took jemalloc's slow path on both (about 2,500 instructions an allocation
/// under callgrind, its thread cache refilled from slabs the other thread's frees had emptied);
/// taken from here it is a lock and a pop.
///
/// At most `limit` buffers wait here; more are freed. Thread-safe.
public final class KafkaBufferPool: Sendable {
    /// The size of every buffer the pool hands out and takes back, in bytes.
    public let bufferSize: Int
    /// The most buffers kept.
    public let limit: Int
    // Addresses rather than pointers, which are not `Sendable`: the pool owns the memory behind them.
    private let free: Mutex<[UInt]>

    public init(bufferSize: Int, limit: Int) {
        precondition(bufferSize >= 16 && limit >= 0, "a pool of \(limit) buffers of \(bufferSize) bytes")
        self.bufferSize = bufferSize
        self.limit = limit
        var free: [UInt] = []
        free.reserveCapacity(limit)
        self.free = Mutex(free)
    }

    deinit {
        free.withLock { free in
            for address in free { UnsafeMutableRawPointer(bitPattern: address)?.deallocate() }
        }
    }

    /// How many buffers wait to be handed out again.
    public var count: Int { free.withLock { $0.count } }

    /// A buffer of ``bufferSize`` bytes, uninitialized, for the caller to own: one given back
    /// before, or a new one.
    public func take() -> UnsafeMutableRawPointer {
        if let address = free.withLock({ $0.popLast() }), let buffer = UnsafeMutableRawPointer(bitPattern: address) {
            return buffer
        }
        return UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 1)
    }

    /// Takes back `buffer`, one of ``bufferSize`` bytes allocated with
    /// `UnsafeMutableRawPointer.allocate` (by ``take()`` or not), which the caller no longer uses;
    /// frees it if the pool already holds ``limit``.
    public func give(_ buffer: UnsafeMutableRawPointer) {
        let kept = free.withLock { free in
            guard free.count < limit else { return false }
            free.append(UInt(bitPattern: buffer))
            return true
        }
        if !kept { buffer.deallocate() }
    }
}
