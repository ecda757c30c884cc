import Dispatch
import Foundation
import ImageCore
import ImageTestSupport
import Synchronization

@_spi(Fuzzing) @testable import DiskCache

/// A wall clock the tests move by hand.
final class ManualDate: Sendable {
    private let date = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
    var now: Date { date.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { date.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var closure: @Sendable () -> Date { { self.now } }
}

/// Drives the periodic sweep by hand (the cache's `sweepTicker` seam).
final class ManualTicker: SweepTicking {
    private let handler = Mutex<(@Sendable () -> Void)?>(nil)
    func start(_ handler: @escaping @Sendable () -> Void) { self.handler.withLock { $0 = handler } }
    func stop() { handler.withLock { $0 = nil } }
    /// One tick, as the timer would give.
    func fire() { handler.withLock { $0 }?() }
}

/// Records the sweeps a cache reports (its `onSweep` seam) and lets a test wait for one.
final class SweepEvents: Sendable {
    private let events = Mutex<[SweepTrigger]>([])
    private let signal = DispatchSemaphore(value: 0)

    var record: @Sendable (SweepTrigger, SweepReport) -> Void {
        { trigger, _ in
            self.events.withLock { $0.append(trigger) }
            self.signal.signal()
        }
    }

    /// Waits until a sweep started by `trigger` was reported (counting those already reported).
    func wait(for trigger: SweepTrigger) {
        var seen = 0
        while true {
            let (found, count) = events.withLock { ($0.dropFirst(seen).contains(trigger), $0.count) }
            if found { return }
            seen = count
            signal.wait()
        }
    }

    var triggers: [SweepTrigger] { events.withLock { $0 } }
}

/// Builds caches over fresh directories with deterministic settings (no timer unless asked).
enum DiskTest {
    static func configuration(
        _ directory: URL, maxDiskSize: Int = 0, maxDiskAge: TimeInterval? = 7 * 24 * 3600,
        sweepInterval: TimeInterval? = nil, sweepAfterBytesWritten: Int? = nil, granularity: TimeInterval = 60,
        clock: ManualDate? = nil, faults: DiskFaultInjector? = nil
    ) -> DiskCacheConfiguration {
        var config = DiskCacheConfiguration(
            directory: directory, maxDiskAge: maxDiskAge, maxDiskSize: maxDiskSize, sweepInterval: sweepInterval,
            sweepAfterBytesWritten: sweepAfterBytesWritten, accessTimeGranularity: granularity)
        config.clock = clock?.closure
        config.faults = faults
        return config
    }

    static func cache(
        _ directory: URL = CacheFixtures.temporaryDirectory("disk"), maxDiskSize: Int = 0,
        maxDiskAge: TimeInterval? = 7 * 24 * 3600, sweepInterval: TimeInterval? = nil,
        sweepAfterBytesWritten: Int? = nil, granularity: TimeInterval = 60, clock: ManualDate? = nil,
        faults: DiskFaultInjector? = nil
    ) -> DiskCache {
        let cache = DiskCache(
            configuration: configuration(
                directory, maxDiskSize: maxDiskSize, maxDiskAge: maxDiskAge, sweepInterval: sweepInterval,
                sweepAfterBytesWritten: sweepAfterBytesWritten, granularity: granularity, clock: clock, faults: faults))
        cache.sweep()  // wait for the start-up sweep, so tests begin from a known state
        return cache
    }

    /// Names of the files in `directory`, without the cache's ownership marker.
    static func files(in directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0 != DiskEntryStore.markerName }.sorted()
    }

    /// The modification time (the cache's access time) of `url`.
    static func accessTime(of url: URL) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
    }

    static func removeDirectory(_ url: URL) { try? FileManager.default.removeItem(at: url) }
}
