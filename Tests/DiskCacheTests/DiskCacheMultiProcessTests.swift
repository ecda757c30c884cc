import Dispatch
import Foundation
import ImageCore
import ImageTestSupport
import Synchronization
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// Two processes writing, reading, sweeping and changing extended data in one directory: this test re-runs its
/// own test binary
/// (`/proc/self/exe`) with `DISKCACHE_WORKER_DIR` set, which enables the worker test in the child only.
/// Each process does `DISKCACHE_MP_OPERATIONS` (1,000) stores and sweeps while its reader verifies entries
/// until the writer is done; set it to 50,000 for the long version. No step depends on time.
@Suite("DiskCache shared by two processes")
struct DiskCacheMultiProcessTests {
    static let limit = 2 << 20
    static let sweepAfter = 400_000
    static let keyCount: UInt64 = 32
    static let environment = ProcessInfo.processInfo.environment
    static var operations: Int { environment["DISKCACHE_MP_OPERATIONS"].flatMap(Int.init) ?? 1_000 }
    /// Bodies are drawn from a fixed pool (so generating them costs nothing during the run); the etag names the
    /// pool index, so a torn or mixed file cannot pass verification.
    static let bodies: [Data] = (0..<16).map { CacheFixtures.bytes(count: 1_000 + $0 * 12_345, seed: UInt64($0) + 1) }

    struct Stats {
        var stores = 0
        var hits = 0
        var errors: [String] = []
        var maxObservedSize = 0
        var corruptReads = 0
    }

    static func cache(_ directory: URL) -> DiskCache {
        DiskCache(
            configuration: DiskTest.configuration(
                directory, maxDiskSize: limit, sweepInterval: 0.5, sweepAfterBytesWritten: sweepAfter, granularity: 1))
    }

    /// The extended data a store of pool body `index` carries (every other store carries none).
    static func extendedData(_ index: Int) -> Data { Data("extended data of body \(index)".utf8) }

    /// Checks an entry against the pool body its etag names, and its extended data (none, or its body's).
    static func verify(_ entry: DiskCacheEntry) -> String? {
        guard let index = entry.metadata.etag.flatMap(Int.init), bodies.indices.contains(index) else {
            return "bad etag \(entry.metadata.etag ?? "nil")"
        }
        guard entry.data == bodies[index] else {
            return "body does not match etag \(index) (\(entry.data.count) bytes)"
        }
        if let extended = entry.metadata.extendedData, extended != extendedData(index) {
            return "extended data \(String(decoding: extended, as: UTF8.self)) on body \(index)"
        }
        return nil
    }

    /// One thread does `operations` stores (and sometimes sweeps) of random keys of a small shared set; another
    /// reads and verifies them until the writer is done, then reads every key once more. So reads overlap
    /// writes, renames and sweeps of both processes.
    static func work(_ directory: URL, seed: UInt64, operations: Int, sampleSize: Bool) -> Stats {
        let cache = cache(directory)
        let writerDone = Locked(false)
        let readerStats = Mutex(Stats())
        let readerDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var random = SplitMix(seed: seed &+ 1000)
            var stats = Stats()
            func read(_ key: String) {
                do {
                    if let entry = try cache.entry(forKey: key) {
                        stats.hits += 1
                        if let problem = verify(entry) { stats.errors.append("read \(key): \(problem)") }
                    }
                } catch {
                    stats.errors.append("read: \(error)")
                }
            }
            while !writerDone.value { read("https://example.com/shared/\(random.next() % keyCount).png") }
            for index in 0..<keyCount { read("https://example.com/shared/\(index).png") }
            readerStats.withLock { $0 = stats }
            readerDone.signal()
        }
        var random = SplitMix(seed: seed)
        var stats = Stats()
        for operation in 1...max(1, operations) {
            let key = "https://example.com/shared/\(random.next() % keyCount).png"
            let choice = random.next() % 50
            if choice == 0 {
                cache.sweep()
            } else if choice < 5 {
                // Remove the extended data of whatever entry the key holds now, in place.
                do {
                    _ = try cache.setExtendedData(nil, forKey: key)
                } catch {
                    stats.errors.append("remove extended data: \(error)")
                }
            } else {
                let index = Int(random.next() % UInt64(bodies.count))
                let metadata = CacheEntryMetadata(
                    etag: "\(index)", extendedData: choice % 2 == 0 ? extendedData(index) : nil)
                do {
                    try cache.storeData(bodies[index], metadata: metadata, forKey: key)
                    stats.stores += 1
                } catch {
                    stats.errors.append("store: \(error)")
                }
            }
            if sampleSize && operation % 10 == 0 {
                stats.maxObservedSize = max(stats.maxObservedSize, cache.totalSize())
            }
        }
        writerDone.withLock { $0 = true }
        readerDone.wait()
        let reader = readerStats.withLock { $0 }
        stats.hits = reader.hits
        stats.errors += reader.errors
        stats.corruptReads = cache.corruptReads.load(ordering: .relaxed)
        return stats
    }

    @Test(
        "worker half of the two-process test (runs only in the child process)",
        .enabled(if: environment["DISKCACHE_WORKER_DIR"] != nil))
    func multiProcessWorker() throws {
        let directory = URL(fileURLWithPath: try #require(Self.environment["DISKCACHE_WORKER_DIR"]))
        let stats = Self.work(directory, seed: 2, operations: Self.operations, sampleSize: false)
        #expect(stats.errors.isEmpty, "\(stats.errors.prefix(5))")
        #expect(stats.corruptReads == 0, "a reader saw a torn or corrupt entry file")
        #expect(stats.stores > 0)
    }

    @Test("two processes writing and sweeping one directory: no error, no torn entry, size under the limit")
    func twoProcesses() throws {
        let directory = CacheFixtures.temporaryDirectory("shared")
        defer { DiskTest.removeDirectory(directory) }
        let log = directory.deletingLastPathComponent().appendingPathComponent("\(directory.lastPathComponent).log")
        defer { try? FileManager.default.removeItem(at: log) }
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["--testing-library", "swift-testing", "--filter", "multiProcessWorker"]
        var environment = Self.environment
        environment["DISKCACHE_WORKER_DIR"] = directory.path
        environment["DISKCACHE_MP_OPERATIONS"] = String(Self.operations)
        child.environment = environment
        let output = try FileHandle(forWritingTo: log)
        child.standardOutput = output
        child.standardError = output
        try child.run()

        let stats = Self.work(directory, seed: 1, operations: Self.operations, sampleSize: true)
        child.waitUntilExit()
        try? output.close()
        let childLog = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        if Self.environment["DISKCACHE_MP_VERBOSE"] != nil {
            print(
                "two processes, \(Self.operations) operations each: parent \(stats.stores) stores, \(stats.hits) verified hits, max size \(stats.maxObservedSize) of limit \(Self.limit)"
            )
        }

        #expect(child.terminationStatus == 0, "worker failed:\n\(childLog.suffix(3000))")
        #expect(childLog.contains("multiProcessWorker") || childLog.contains("worker half"), "worker did not run")
        #expect(stats.errors.isEmpty, "\(stats.errors.prefix(5))")
        #expect(stats.stores > 0 && stats.hits > 0)
        #expect(stats.corruptReads == 0, "a reader saw a torn or corrupt entry file")
        // While both ran: each process re-reads the directory at least every `sweepAfter` bytes it writes, so
        // the total can exceed the limit by what both wrote since their last sweep.
        let slack = 2 * (Self.sweepAfter + Self.bodies.map(\.count).max()! + 100)
        #expect(stats.maxObservedSize <= Self.limit + slack, "observed \(stats.maxObservedSize)")

        // Afterwards: one sweep brings it under the limit, and every file left is a whole, valid entry.
        let cache = Self.cache(directory)
        cache.sweep()
        #expect(cache.totalSize() <= Self.limit)
        let names = DiskTest.files(in: directory)
        #expect(!names.contains { $0.hasPrefix(".tmp-") })
        for name in names {
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            let parsed = data.withUnsafeBytes { DiskEntryCodec.parse($0) }
            let metadata = try #require(parsed?.metadata, "invalid entry file \(name)")
            let key = try #require(metadata.originalKey)
            #expect(DiskFileNaming.fileName(forKey: key) == name)
            let entry = try #require(try cache.entry(forKey: key))
            #expect(Self.verify(entry) == nil)
        }
    }
}

/// A tiny deterministic generator (SplitMix64).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
