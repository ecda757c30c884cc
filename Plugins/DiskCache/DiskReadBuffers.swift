import Synchronization

/// Recycles the buffers hits read entry files into: a hit hands its buffer to the `Data` it returns, and the
/// `Data`'s deallocator gives it back here, so a steady stream of hits reuses a few warm buffers instead of
/// asking `malloc` for tens of kilobytes each time (glibc's path for such sizes costs several hundred
/// instructions a hit, plus as many again to free).
///
/// Buffers come in power-of-two size classes from 4 KiB to 1 MiB; each class keeps at most
/// ``buffersPerClass`` free buffers (at most about 4 MiB in all, for the whole process). Larger reads, and frees
/// when a class is full, go to the system allocator. Thread-safe: one `Mutex`, held for a push or a pop.
enum DiskReadBuffers {
    static let smallestClassShift = 12
    static let largestClassShift = 20
    static let buffersPerClass = 2
    private static let classCount = largestClassShift - smallestClassShift + 1
    /// Free buffers by size class, as addresses (plain integers cross threads without ceremony); the memory is
    /// owned by this pool while its address is here.
    private static let free = Mutex<[[UInt]]>(Array(repeating: [], count: classCount))

    /// The size class for a buffer of `count` bytes, or nil when it is too large to pool.
    @inline(__always)
    static func sizeClass(for count: Int) -> Int? {
        guard count <= 1 << largestClassShift else { return nil }
        let shift = max(smallestClassShift, Int.bitWidth - (max(count, 1) - 1).leadingZeroBitCount)
        return shift - smallestClassShift
    }

    /// A buffer of at least `count` bytes, 16-byte aligned; give it back with ``release(_:sizeClass:)``.
    static func take(_ count: Int) -> (buffer: UnsafeMutableRawPointer, sizeClass: Int) {
        guard let sizeClass = sizeClass(for: count) else {
            return (UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16), -1)
        }
        if let reused = free.withLock({ $0[sizeClass].popLast() }),
            let pointer = UnsafeMutableRawPointer(bitPattern: reused)
        {
            return (pointer, sizeClass)
        }
        let capacity = 1 << (sizeClass + smallestClassShift)
        return (UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16), sizeClass)
    }

    /// Gives back a buffer from ``take(_:)`` (`sizeClass` as it returned).
    static func release(_ buffer: UnsafeMutableRawPointer, sizeClass: Int) {
        guard sizeClass >= 0, sizeClass < classCount else { return buffer.deallocate() }
        let address = UInt(bitPattern: buffer)
        let kept = free.withLock { free -> Bool in
            guard free[sizeClass].count < buffersPerClass else { return false }
            free[sizeClass].append(address)
            return true
        }
        if !kept { buffer.deallocate() }
    }

    /// Buffers of `sizeClass` now kept (tests).
    static func keptCount(_ sizeClass: Int) -> Int { free.withLock { $0[sizeClass].count } }
}
