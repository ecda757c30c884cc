#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes of one or more ``PixelBuffer`` values: a block from a ``PixelPool``, given back when the last buffer
/// using it goes.
///
/// `@unchecked Sendable`: the bytes are written only through a buffer that holds the only reference
/// (`isKnownUniquelyReferenced`, copy-on-write in ``PixelBuffer/withUnsafeMutableBytes(_:)``) or before the storage
/// is first shared (the initializers), so every value that can be seen from two threads is immutable.
final class PixelStorage: @unchecked Sendable {
    /// The first byte; valid for `count` bytes (capacity may be larger).
    let base: UnsafeMutableRawPointer
    /// Bytes of pixels.
    let count: Int
    private let capacity: Int
    private let pool: PixelPool

    /// Storage of `count` bytes whose contents are unspecified; `zeroed` says whether they are known to be zero.
    init(count: Int, pool: PixelPool = .shared) {
        let block = pool.allocate(count)
        base = block.base
        capacity = block.capacity
        zeroed = block.zeroed
        self.count = count
        self.pool = pool
        base.bindMemory(to: UInt8.self, capacity: max(count, 0))
    }

    /// Whether the bytes were zero when the storage was made (fresh pages from the kernel).
    let zeroed: Bool

    deinit { pool.release(base, capacity: capacity) }

    /// The bytes as a typed buffer.
    var bytes: UnsafeMutableBufferPointer<UInt8> {
        UnsafeMutableBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)
    }

    /// Storage of `count` zero bytes.
    static func zeroed(count: Int) -> PixelStorage {
        let storage = PixelStorage(count: count)
        if !storage.zeroed { memset(storage.base, 0, count) }
        return storage
    }

    /// A copy of `bytes`.
    static func copying(_ bytes: UnsafeBufferPointer<UInt8>) -> PixelStorage {
        let storage = PixelStorage(count: bytes.count)
        if let source = bytes.baseAddress, bytes.count > 0 {
            storage.base.copyMemory(from: source, byteCount: bytes.count)
        }
        return storage
    }
}
