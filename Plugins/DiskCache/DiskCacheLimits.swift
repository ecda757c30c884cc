import Foundation
import Synchronization

/// The limits of a ``DiskCache`` that may change while it runs (``DiskCache/maxDiskSize``,
/// ``DiskCache/maxDiskAge``), read without a lock on every hit, store and sweep.
///
/// Thread-safe: each value is one atomic word. A change is seen by the operations that start after it; an
/// operation already running finishes with the values it read.
final class DiskCacheLimits: Sendable {
    /// ``DiskCacheConfiguration/maxDiskSize``; 0 means no size limit.
    private let size: Atomic<Int>
    /// The bit pattern of ``DiskCacheConfiguration/maxDiskAge``; `noAge` for nil.
    private let ageBits: Atomic<UInt64>
    /// ``DiskCacheConfiguration/sweepAfterBytesWritten`` when the configuration set it, else 0 (derived from the
    /// size limit).
    private let fixedSweepAfter: Int
    /// ``DiskCacheConfiguration/maxEntrySize``.
    let maxEntrySize: Int
    let lowWaterFraction: Double

    private static let noAge = UInt64.max

    init(configuration: DiskCacheConfiguration) {
        size = Atomic(configuration.maxDiskSize)
        ageBits = Atomic(Self.bits(of: configuration.maxDiskAge))
        fixedSweepAfter = configuration.sweepAfterBytesWrittenIsDerived ? 0 : configuration.sweepAfterBytesWritten
        maxEntrySize = configuration.maxEntrySize
        lowWaterFraction = configuration.lowWaterFraction
    }

    private static func bits(of age: TimeInterval?) -> UInt64 {
        guard let age, !age.isNaN else { return noAge }
        return max(0, age).bitPattern
    }

    var maxDiskSize: Int {
        get { size.load(ordering: .relaxed) }
        set { size.store(max(0, newValue), ordering: .relaxed) }
    }

    var maxDiskAge: TimeInterval? {
        get {
            let bits = ageBits.load(ordering: .relaxed)
            return bits == Self.noAge ? nil : Double(bitPattern: bits)
        }
        set { ageBits.store(Self.bits(of: newValue), ordering: .relaxed) }
    }

    /// The size a sweep over the limit trims down to.
    var lowWaterMark: Int { Int(Double(maxDiskSize) * lowWaterFraction) }

    /// The body size limit in effect: ``maxEntrySize``, and never more than the size limit when one is set.
    var effectiveMaxEntrySize: Int {
        let limit = maxDiskSize
        return limit > 0 ? min(maxEntrySize, limit) : maxEntrySize
    }

    /// Bytes written between write-driven sweeps: as configured, else a tenth of the size limit in force (64 MiB
    /// with no size limit).
    var sweepAfterBytesWritten: Int {
        if fixedSweepAfter > 0 { return fixedSweepAfter }
        let limit = maxDiskSize
        return max(1, limit > 0 ? limit / 10 : 64 << 20)
    }
}
