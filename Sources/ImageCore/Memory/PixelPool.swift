import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Recycled memory for pixels: every ``PixelBuffer`` of 64 KiB or more takes its storage from here and gives it
/// back when the last buffer using it goes, so decoded frames, resize intermediates and encoder inputs reuse pages
/// that are already resident instead of pages the kernel must fault in and zero.
///
/// Why: a decode writes a fresh multi-megabyte buffer each time. glibc serves those from `mmap` and unmaps them on
/// `free`, so every decode paid about one page fault per 4 KiB and the kernel's zeroing of every page (a fifth of a
/// cold load's CPU time), and the process's resident set followed the allocator's trimming thresholds rather than
/// what it held.
///
/// How: blocks are mapped by the pool itself (`mmap`, page-aligned; the pool never hands out memory it did not map)
/// in size classes four to a power of two (64 KiB, 80 KiB, 96 KiB, 112 KiB, 128 KiB, …, so at most a quarter of a
/// block is slack). A released block goes on its class's free list, most recently used first, while the idle
/// blocks stay within ``byteLimit``; beyond it, and for blocks over 1 GiB, it is unmapped at once. Blocks idle for
/// longer than ``idleTrimDelay`` are unmapped by a timer, so a burst's memory goes back to the system once the burst
/// is over; ``trim()`` unmaps every idle block at once (for a memory warning). Blocks of 2 MiB or more are aligned
/// to, and their whole huge pages advised for, transparent huge pages (``usesHugePages``). Smaller buffers come from
/// `malloc`, whose own bins recycle them well.
///
/// What a buffer holds resident is counted, not assumed: a buffer that ends inside a huge page holds that whole
/// page, and a reused block first gives back (`MADV_DONTNEED`) the pages an earlier, larger buffer touched beyond
/// what the new one reaches, so ``Image/memoryCost`` (and with it a memory cache's limit) is the resident memory.
///
/// Thread-safe: one lock, held for a push or a pop (never while mapping, unmapping or zeroing). Storage handed out
/// is the caller's until released; its contents are unspecified (an earlier buffer's pixels) unless asked zeroed.
public final class PixelPool: Sendable {
    /// The pool every ``PixelBuffer`` uses.
    public static let shared = PixelPool()

    /// The default ``byteLimit``: 64 MiB of idle blocks.
    public static let defaultByteLimit = 64 << 20

    /// The smallest buffer the pool serves; smaller ones come from `malloc`.
    public static let minimumPooledSize = 64 << 10

    /// The largest block the pool keeps when released (1 GiB); larger ones are mapped and unmapped each time.
    static let maximumPooledSize = 1 << 30

    /// What the pool holds and has done, for tests, benchmarks and metrics.
    public struct Statistics: Sendable, Hashable {
        /// Bytes of idle blocks (mapped, resident once used, waiting for reuse).
        public var idleBytes: Int
        /// Number of idle blocks.
        public var idleBlocks: Int
        /// Bytes of pooled-size blocks handed out and not yet released.
        public var liveBytes: Int
        /// Allocations served from an idle block.
        public var reused: Int
        /// Allocations that mapped a new block.
        public var mapped: Int
        /// Blocks unmapped (over the limit on release, trimmed when idle, or by ``PixelPool/trim()``).
        public var unmapped: Int
    }

    /// Storage handed out by ``allocate(_:)``, to be given back whole to ``release(_:)``.
    struct Block {
        /// The first byte (page-aligned when mapped by the pool).
        let base: UnsafeMutableRawPointer
        /// The bytes the block spans (at least the count asked for).
        let capacity: Int
        /// Bytes from `base` advised for huge pages: a multiple of ``hugePageSize``, or 0.
        let advised: Int
        /// Whether the bytes are known to be zero (a block fresh from the kernel).
        let zeroed: Bool
        /// Bytes of the block resident once the count asked for is written: the count, or the whole huge pages it
        /// reaches inside the advised part.
        let resident: Int
    }

    private struct IdleBlock: Sendable {
        /// The block's address: a pointer is not `Sendable`, and the lock's state must be.
        let address: UInt
        var base: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: address)! }
        /// The block's advised bytes and what its last user made resident (see ``Block``).
        let advised: Int
        let resident: Int
        init(_ block: Block, released: UInt64, sequence: UInt64) {
            address = UInt(bitPattern: block.base)
            advised = block.advised
            resident = block.resident
            self.released = released
            self.sequence = sequence
        }
        /// When it was released, in `DispatchTime` nanoseconds (for the idle trim).
        let released: UInt64
        /// The order of its release among all of the pool's releases (two releases may share a clock reading).
        let sequence: UInt64
    }

    private struct State: ~Copyable {
        /// Idle blocks per size class, the most recently released last.
        var free: [[IdleBlock]] = Array(repeating: [], count: PixelPool.classCount)
        var byteLimit: Int
        var idleTrimNanoseconds: UInt64
        var trimScheduled = false
        var releases: UInt64 = 0
        var statistics = Statistics(idleBytes: 0, idleBlocks: 0, liveBytes: 0, reused: 0, mapped: 0, unmapped: 0)
    }

    private let state: Mutex<State>

    /// Creates a pool keeping at most `byteLimit` bytes of idle blocks, each for at most `idleTrimDelay`.
    public init(byteLimit: Int = PixelPool.defaultByteLimit, idleTrimDelay: Duration = .seconds(2)) {
        state = Mutex(State(byteLimit: max(0, byteLimit), idleTrimNanoseconds: Self.nanoseconds(idleTrimDelay)))
    }

    /// The most bytes of idle blocks the pool keeps; lowering it unmaps the oldest idle blocks over the new limit.
    /// `0` turns recycling off (every block is unmapped when released).
    public var byteLimit: Int {
        get { state.withLock { $0.byteLimit } }
        set {
            let excess = state.withLock { state -> [(UnsafeMutableRawPointer, Int)] in
                state.byteLimit = max(0, newValue)
                return Self.takeOldest(&state, over: state.byteLimit)
            }
            Self.unmap(excess)
        }
    }

    /// How long a block may stay idle before the pool unmaps it.
    public var idleTrimDelay: Duration {
        get { .nanoseconds(Int64(clamping: state.withLock { $0.idleTrimNanoseconds })) }
        set {
            let nanoseconds = Self.nanoseconds(newValue)
            state.withLock { $0.idleTrimNanoseconds = nanoseconds }
        }
    }

    /// Whether blocks the pool maps for buffers of 2 MiB or more are backed by transparent huge pages (Linux,
    /// `madvise(MADV_HUGEPAGE)`): one page fault and one TLB entry per 2 MiB instead of per 4 KiB.
    ///
    /// A cold load of a 2 MP photo faults in 8 MB of fresh pixels. On this project's 2-core machine, the cold whole
    /// path (fetch, decode, store; Benchmarks' HTTPProfile, three interleaved passes) ran at 148–159 images/s on one
    /// thread against 96–108 with small pages, and at 251–300 against 183–235 on two. A block's whole huge pages
    /// are advised; a class's slack past them stays in small pages, untouched. A buffer that ends inside a huge
    /// page holds all of it, and ``Image/memoryCost`` counts it (a 1920x1080 RGBA frame: 8 MiB, not 7.9), so a
    /// memory cache's limit still bounds what is resident.
    ///
    /// The cost: where the kernel's THP `defrag` setting is `madvise` (Debian's default), a fault may compact memory
    /// to find a huge page, which can stall an allocation on a fragmented machine; set this to `false` to keep small
    /// pages. No effect where THP is `never`. Default `true`; applies to blocks mapped from then on.
    public var usesHugePages: Bool {
        get { hugePages.load(ordering: .relaxed) }
        set { hugePages.store(newValue, ordering: .relaxed) }
    }

    private let hugePages = Atomic<Bool>(true)

    /// A snapshot of the pool's counters.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Unmaps every idle block (blocks in use are untouched and return as usual).
    public func trim() {
        Self.unmap(state.withLock { Self.takeOldest(&$0, over: 0) })
    }

    // MARK: - Allocation

    /// Storage of at least `count` bytes, to be given back to ``release(_:)``. Nil when the system refuses the
    /// memory even after the pool gave back its idle blocks.
    func allocate(_ count: Int) -> Block? {
        guard count >= Self.minimumPooledSize, !Self.underAddressSanitizer else {
            // malloc, not `allocate(byteCount:)`, which ends the process when the memory is refused.
            return malloc(max(count, 1)).map {
                Block(base: $0, capacity: count, advised: 0, zeroed: false, resident: count)
            }
        }
        guard let sizeClass = Self.sizeClass(for: count) else {
            return Self.map(Self.pageRounded(count), using: count, retrying: self)
        }
        let size = Self.classSize(sizeClass)
        let reused = state.withLock { state -> IdleBlock? in
            state.statistics.liveBytes += size
            guard let block = state.free[sizeClass].popLast() else {
                state.statistics.mapped += 1
                return nil
            }
            state.statistics.idleBytes -= size
            state.statistics.idleBlocks -= 1
            state.statistics.reused += 1
            return block
        }
        if let reused {
            let resident = Self.residentBytes(count, advised: reused.advised)
            // Pages an earlier, larger buffer touched past what this one reaches: given back, so the block holds
            // what its buffer counts (a later larger buffer faults them in again).
            let keep = Self.pageRounded(resident)
            let touched = Self.pageRounded(reused.resident)
            if touched > keep {
                #if canImport(Glibc) || canImport(Musl)
                    _ = madvise(reused.base + keep, touched - keep, Int32(MADV_DONTNEED))
                #endif
            }
            return Block(base: reused.base, capacity: size, advised: reused.advised, zeroed: false, resident: resident)
        }
        guard let block = Self.map(size, using: count, retrying: self) else {
            state.withLock {
                $0.statistics.liveBytes -= size
                $0.statistics.mapped -= 1
            }
            return nil
        }
        return block
    }

    /// Gives back storage from ``allocate(_:)``: kept for reuse while the idle blocks fit the limit, else unmapped.
    func release(_ block: Block) {
        let (base, capacity) = (block.base, block.capacity)
        guard capacity >= Self.minimumPooledSize, !Self.underAddressSanitizer else {
            free(base)
            return
        }
        guard let sizeClass = Self.sizeClass(for: capacity), Self.classSize(sizeClass) == capacity else {
            Self.unmap([(base, capacity)])
            return
        }
        let (kept, schedule) = state.withLock { state -> (Bool, Bool) in
            state.statistics.liveBytes -= capacity
            guard state.statistics.idleBytes + capacity <= state.byteLimit else {
                state.statistics.unmapped += 1
                return (false, false)
            }
            state.releases += 1
            state.free[sizeClass].append(
                IdleBlock(block, released: DispatchTime.now().uptimeNanoseconds, sequence: state.releases))
            state.statistics.idleBytes += capacity
            state.statistics.idleBlocks += 1
            let schedule = !state.trimScheduled
            state.trimScheduled = true
            return (true, schedule)
        }
        if !kept { Self.unmap([(base, capacity)]) }
        if schedule { scheduleTrim() }
    }

    // MARK: - Trimming when idle

    private func scheduleTrim() {
        let delay = state.withLock { $0.idleTrimNanoseconds }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay))) {
            [weak self] in self?.trimIdle()
        }
    }

    /// Unmaps the blocks idle for longer than the delay; runs again while idle blocks remain.
    private func trimIdle() {
        let now = DispatchTime.now().uptimeNanoseconds
        let (stale, again) = state.withLock { state -> ([(UnsafeMutableRawPointer, Int)], Bool) in
            var stale: [(UnsafeMutableRawPointer, Int)] = []
            let cutoff = now &- state.idleTrimNanoseconds
            for sizeClass in state.free.indices where !state.free[sizeClass].isEmpty {
                let size = Self.classSize(sizeClass)
                // Oldest first: released in order, so the stale ones are a prefix.
                let count = state.free[sizeClass].prefix { $0.released <= cutoff }.count
                guard count > 0 else { continue }
                for block in state.free[sizeClass].prefix(count) { stale.append((block.base, size)) }
                state.free[sizeClass].removeFirst(count)
                state.statistics.idleBytes -= size * count
                state.statistics.idleBlocks -= count
            }
            state.statistics.unmapped += stale.count
            state.trimScheduled = state.statistics.idleBlocks > 0
            return (stale, state.trimScheduled)
        }
        Self.unmap(stale)
        if again { scheduleTrim() }
    }

    /// Removes idle blocks, oldest first, until at most `limit` idle bytes remain; returns them to unmap.
    private static func takeOldest(_ state: inout State, over limit: Int) -> [(UnsafeMutableRawPointer, Int)] {
        var taken: [(UnsafeMutableRawPointer, Int)] = []
        while state.statistics.idleBytes > limit {
            var oldest: (sizeClass: Int, sequence: UInt64)?
            for sizeClass in state.free.indices {
                guard let first = state.free[sizeClass].first else { continue }
                if oldest == nil || first.sequence < oldest!.sequence { oldest = (sizeClass, first.sequence) }
            }
            guard let oldest else { break }
            let block = state.free[oldest.sizeClass].removeFirst()
            let size = classSize(oldest.sizeClass)
            taken.append((block.base, size))
            state.statistics.idleBytes -= size
            state.statistics.idleBlocks -= 1
            state.statistics.unmapped += 1
        }
        return taken
    }

    /// True in a process with AddressSanitizer (its runtime defines `__asan_init`): every block then comes from
    /// `malloc`, whose red zones ASan checks. Memory the pool maps itself has none, so a decoder writing past a
    /// buffer would go unseen in the very runs meant to see it.
    static let underAddressSanitizer: Bool = {
        #if canImport(Glibc) || canImport(Musl)
            // RTLD_DEFAULT (a null handle on glibc and musl): the global symbol scope of the process.
            return dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
        #else
            return false
        #endif
    }()

    // MARK: - Size classes and mappings

    /// Classes from 64 KiB (2^16) up to 1 GiB (2^30), four per power of two.
    private static let smallestClassShift = 16
    static let classCount = (30 - smallestClassShift) * 4 + 1

    /// The size class of the smallest class size ≥ `count`; nil above the largest.
    static func sizeClass(for count: Int) -> Int? {
        guard count <= maximumPooledSize else { return nil }
        let needed = max(count, minimumPooledSize)
        // Largest power of two ≤ needed, then the quarter steps above it.
        let shift = Int.bitWidth - 1 - needed.leadingZeroBitCount
        let base = 1 << shift
        let quarter = base >> 2
        let steps = (needed - base + quarter - 1) / quarter
        let sizeClass = (shift - smallestClassShift) * 4 + steps
        return sizeClass < classCount ? sizeClass : nil
    }

    /// The bytes of a block of `sizeClass`.
    static func classSize(_ sizeClass: Int) -> Int {
        let base = 1 << (smallestClassShift + sizeClass / 4)
        return base + (base >> 2) * (sizeClass % 4)
    }

    private static let pageSize = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))

    private static func pageRounded(_ count: Int) -> Int { (count + pageSize - 1) / pageSize * pageSize }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000)
    }

    /// Maps a block of `size` bytes for a buffer of `count`; when the system refuses, drops the pool's idle blocks
    /// and tries once more. Nil when it still refuses: the caller turns that into a typed error or, where no error
    /// can be thrown, a trap.
    private static func map(_ size: Int, using count: Int, retrying pool: PixelPool) -> Block? {
        let advised = pool.usesHugePages ? size / hugePageSize * hugePageSize : 0
        var base = mapOnce(size, advised: advised)
        if base == nil {
            pool.trim()
            base = mapOnce(size, advised: advised)
        }
        return base.map {
            Block(
                base: $0, capacity: size, advised: advised, zeroed: true,
                resident: residentBytes(count, advised: advised))
        }
    }

    /// The bytes a buffer of `count` makes resident in a block with `advised` bytes of huge pages: inside the
    /// advised part the whole huge pages it reaches (a huge page is faulted in whole), past it the count (small
    /// pages; the page rounding, under 4 KiB, is left out).
    static func residentBytes(_ count: Int, advised: Int) -> Int {
        guard count < advised else { return count }
        return (count + hugePageSize - 1) / hugePageSize * hugePageSize
    }

    /// Maps `size` bytes, advising the first `advised` (the block's whole huge pages, or 0) for huge pages. A buffer
    /// ending inside an advised huge page holds all of it (``residentBytes(_:advised:)`` counts it); a class's
    /// slack past the advised part stays in small pages, untouched.
    private static func mapOnce(_ size: Int, advised: Int) -> UnsafeMutableRawPointer? {
        guard advised >= hugePageSize else {
            let base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            guard let base, base != MAP_FAILED else { return nil }
            return base
        }
        // Mapped a huge page larger and trimmed to a huge-page boundary, so the kernel can back it with 2 MiB pages.
        let span = size + hugePageSize
        let raw = mmap(nil, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let raw, raw != MAP_FAILED else { return nil }
        let address = UInt(bitPattern: raw)
        let mask = UInt(hugePageSize) - 1
        let head = Int(((address + mask) & ~mask) - address)
        let base = raw + head
        if head > 0 { munmap(raw, head) }
        if span - head - size > 0 { munmap(base + size, span - head - size) }
        #if canImport(Glibc)
            _ = madvise(base, advised, Int32(MADV_HUGEPAGE))
        #endif
        return base
    }

    /// The size of a transparent huge page on x86-64 and on arm64 with 4 KiB pages.
    static let hugePageSize = 2 << 20

    private static func unmap(_ blocks: [(UnsafeMutableRawPointer, Int)]) {
        for (base, size) in blocks { munmap(base, size) }
    }
}

extension PixelPool {
    /// Runs `body` with `byteCount` bytes of scratch memory from the pool (contents unspecified), given back when
    /// `body` returns: for large intermediates of a pixel operation (a blur's rows, a colour conversion's input).
    /// The pointer is valid only inside `body`.
    public func withTemporaryStorage<R, E: Error>(
        byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        guard let block = allocate(max(0, byteCount)) else {
            preconditionFailure("PixelPool: the system refused \(byteCount) bytes of scratch memory")
        }
        defer { release(block) }
        return try body(UnsafeMutableRawBufferPointer(start: block.base, count: max(0, byteCount)))
    }
}
