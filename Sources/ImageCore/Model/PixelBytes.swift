#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes of a ``PixelBuffer`` as a read-only collection, without a copy (``PixelBuffer/bytes``).
///
/// It holds the buffer's storage as it was when read: the buffer's next write copies the storage first
/// (copy-on-write), so these bytes never change under you. Indexing is bounds-checked and O(1); compare with an
/// array with `==`, make one with `Array(_:)`, and reach the memory with ``withUnsafeBytes(_:)``.
///
/// Thread-safe: the bytes it shows are immutable.
public struct PixelBytes: RandomAccessCollection, Sendable {
    private let storage: PixelStorage

    init(_ storage: PixelStorage) { self.storage = storage }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of bytes.
    public var endIndex: Int { storage.count }

    /// The byte at `position`.
    ///
    /// - Precondition: `0 ≤ position < count`.
    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < storage.count, "PixelBytes: index \(position) out of range")
        return storage.base.load(fromByteOffset: position, as: UInt8.self)
    }

    /// Iterates the bytes in order.
    public struct Iterator: IteratorProtocol, Sendable {
        private let storage: PixelStorage
        private var position: Int

        init(_ storage: PixelStorage, position: Int) {
            self.storage = storage
            self.position = position
        }

        /// The next byte, or nil after the last.
        public mutating func next() -> UInt8? {
            guard position < storage.count else { return nil }
            defer { position += 1 }
            return storage.base.load(fromByteOffset: position, as: UInt8.self)
        }
    }

    /// An iterator from the first byte.
    public func makeIterator() -> Iterator { Iterator(storage, position: 0) }

    /// Copies the bytes at once (`Array(bytes)`, `[UInt8](bytes)`, `append(contentsOf:)`), where the default would
    /// copy them one by one through the iterator: a byte loop, and an unoptimized one in a debug build.
    public func _copyContents(initializing buffer: UnsafeMutableBufferPointer<UInt8>) -> (Iterator, Int) {
        let copied = Swift.min(buffer.count, storage.count)
        if copied > 0, let target = buffer.baseAddress {
            target.initialize(from: storage.base.assumingMemoryBound(to: UInt8.self), count: copied)
        }
        withExtendedLifetime(storage) {}
        return (Iterator(storage, position: copied), copied)
    }

    /// Runs `body` with the bytes' memory; the pointer is valid only inside `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        let result = try body(UnsafeBufferPointer(storage.bytes))
        withExtendedLifetime(storage) {}
        return result
    }

    /// The same as ``withUnsafeBytes(_:)``, under `Array`'s name, so code written for `[UInt8]` reads these as well.
    public func withUnsafeBufferPointer<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R
    {
        try withUnsafeBytes(body)
    }

    /// Contiguous, so `Array(_:)`, `elementsEqual` and the like copy or compare the memory at once.
    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        let result = try body(UnsafeBufferPointer(storage.bytes))
        withExtendedLifetime(storage) {}
        return result
    }
}

extension PixelBytes: Equatable {
    /// Equal when the bytes are, in order.
    public static func == (lhs: PixelBytes, rhs: PixelBytes) -> Bool {
        lhs.storage === rhs.storage || lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in same(a, b) } }
    }

    /// Whether the bytes equal `rhs`, in order.
    public static func == (lhs: PixelBytes, rhs: [UInt8]) -> Bool {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBufferPointer { b in same(a, b) } }
    }

    /// `memcmp`: the generic `elementsEqual` is a byte loop, and an unoptimized one in the debug builds tests run.
    private static func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let left = a.baseAddress, let right = b.baseAddress else { return true }
        return memcmp(left, right, a.count) == 0
    }

    /// Whether `lhs` equals the bytes, in order.
    public static func == (lhs: [UInt8], rhs: PixelBytes) -> Bool { rhs == lhs }

    /// Whether the bytes differ from `rhs`.
    public static func != (lhs: PixelBytes, rhs: [UInt8]) -> Bool { !(lhs == rhs) }

    /// Whether `lhs` differs from the bytes.
    public static func != (lhs: [UInt8], rhs: PixelBytes) -> Bool { !(rhs == lhs) }
}

extension Slice where Base == PixelBytes {
    /// Whether two ranges of pixel bytes hold the same bytes, in order (a row against a row).
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.elementsEqual(rhs) }

    /// Whether a range of pixel bytes equals `rhs`, in order.
    public static func == (lhs: Self, rhs: [UInt8]) -> Bool { lhs.elementsEqual(rhs) }

    /// Whether two ranges of pixel bytes differ.
    public static func != (lhs: Self, rhs: Self) -> Bool { !lhs.elementsEqual(rhs) }
}
