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
    /// Bytes of memory these pixels hold resident (``PixelPool/Block/resident``): at least `count`.
    var resident: Int { block.resident }
    private let block: PixelPool.Block
    private let pool: PixelPool

    private init(block: PixelPool.Block, count: Int, pool: PixelPool) {
        base = block.base
        self.block = block
        zeroed = block.zeroed
        self.count = count
        self.pool = pool
        base.bindMemory(to: UInt8.self, capacity: max(count, 0))
    }

    /// Storage of `count` bytes whose contents are unspecified (``zeroed`` says whether they are known to be zero),
    /// or nil when the system refuses the memory.
    convenience init?(reserving count: Int, pool: PixelPool = .shared) {
        guard let block = pool.allocate(count) else { return nil }
        self.init(block: block, count: count, pool: pool)
    }

    /// Storage of `count` bytes, for sizes the caller computed itself: the process ends when the system refuses the
    /// memory, as it does for an `Array`. Sizes from untrusted input go through ``allocating(count:)``.
    convenience init(count: Int, pool: PixelPool = .shared) {
        guard let block = pool.allocate(count) else {
            preconditionFailure("PixelBuffer: the system refused \(count) bytes of pixel memory")
        }
        self.init(block: block, count: count, pool: pool)
    }

    /// Storage of `count` bytes, or ``ImageError`` `imageTooLarge` (stage `decode`) when the system refuses them.
    static func allocating(count: Int) throws(ImageError) -> PixelStorage {
        guard let storage = PixelStorage(reserving: count) else {
            throw ImageError(
                .imageTooLarge, stage: .decode, message: "the system refused \(count) bytes of pixel memory")
        }
        return storage
    }

    /// Whether the bytes were zero when the storage was made (fresh pages from the kernel).
    let zeroed: Bool

    deinit { pool.release(block) }

    /// The bytes as a typed buffer.
    var bytes: UnsafeMutableBufferPointer<UInt8> {
        UnsafeMutableBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)
    }

    /// Makes these bytes zero, unless they are known to be; returns self.
    func zeroingIfNeeded() -> PixelStorage {
        if !zeroed { memset(base, 0, count) }
        return self
    }

    /// Copies `bytes` (at most ``count`` of them) to the start of this storage; returns self.
    func copying(_ bytes: UnsafeBufferPointer<UInt8>) -> PixelStorage {
        if let source = bytes.baseAddress, bytes.count > 0 {
            base.copyMemory(from: source, byteCount: min(bytes.count, count))
        }
        return self
    }
}
