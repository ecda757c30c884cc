import Foundation
import ImageTestSupport
import RedisCache
import WebImage

@testable import DiskCache
@testable import ImageCore

/// One manager of a program: real `MemoryCache` and `DiskCache` (and, in a fleet program, a `RedisCache` shared
/// with the other replica), behind a ledger of cache misses.
struct Replica {
    let manager: ImageManager
    let ledger: MissLedger
    /// The levels the ledger wraps (``LoadControl/cacheHitPromotion`` toggles their `promotesHits`).
    let caches: CachesManager
    let memory: MemoryCache
    let disk: DiskCache
    let redis: RedisCache?
}

/// A control a program used on a wave: when it ran and what it reached.
struct ControlEvent {
    let control: LoadControl
    let replica: Int
    let url: URL?
    var begin = Date()
    var end = Date()
}

/// One random program and its checks.
struct ModelProgram {
    struct Outcome {
        var loads = 0
        var messages: [String] = []
        var coverage = ModelCoverage()
    }

    /// The fleet's coalescing: short polls and waits, so a lease nobody ends shows as seconds, not minutes.
    static let coalescing = RedisCacheConfiguration.FleetCoalescing(
        leaseDuration: 4, maxWait: 3, pollInterval: 0.01...0.05)

    let seed: UInt64
    let redis: ModelRedisServer?

    func run() async throws -> Outcome {
        var random = SplitMix64(seed: seed)
        let world = ModelWorld(origin: ModelWorld.makeOrigin())
        let origin = world.origin
        let checker = ModelChecker(world: world)
        let fleet = redis != nil && Double.random(in: 0..<1, using: &random) < 0.25
        let replicaCount = fleet ? 2 : 1
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("model-\(seed)-\(UUID())")
        defer { try? FileManager.default.removeItem(at: base) }
        let prefix = "model-\(seed)-\(UUID().uuidString.prefix(8)):"
        // Mostly few downloads ahead of the decoder, so loads wait for admission (by priority) and are cancelled
        // while they wait; sometimes the default.
        let downloadsAhead =
            Double.random(in: 0..<1, using: &random) < 0.75
            ? Int.random(in: 1...3, using: &random) : ImageManager.defaultMaxDownloadsAheadOfDecoding
        // Some programs run on a failing disk: each wave, its stores fail as a full or read-only disk's would, or
        // not. No load's answer may change (a store's failure is the cache's, never the load's), and every claimed
        // miss still ends once.
        let diskFaults = Double.random(in: 0..<1, using: &random) < 0.2 ? DiskFaultInjector() : nil
        func makeReplicas() throws -> [Replica] {
            try (0..<replicaCount).map { index in
                let replica = Self.makeReplica(
                    directory: base.appendingPathComponent("disk-\(index)"), world: world,
                    redis: fleet ? try redis?.cache(prefix: prefix, coalescing: Self.coalescing) : nil,
                    faults: diskFaults)
                replica.manager.maxDownloadsAheadOfDecoding = downloadsAhead
                return replica
            }
        }
        var replicas = try makeReplicas()
        defer { for replica in replicas { replica.redis?.shutdown() } }
        var outcome = Outcome()
        if fleet { outcome.coverage.note("fleet program") }
        let waves = Int.random(in: 1...4, using: &random)
        for wave in 0..<waves {
            // The origin changes between waves, and sometimes the process restarts.
            for url in ModelWorld.urls {
                if Double.random(in: 0..<1, using: &random) < 0.3 {
                    if Bool.random(using: &random) {
                        origin.bump(url)
                    } else {
                        origin.set(ModelOrigin.Mode.allCases.randomElement(using: &random)!, for: url)
                    }
                }
                origin.setTrickle(Double.random(in: 0..<1, using: &random) < 0.4, for: url)
            }
            if let diskFaults {
                diskFaults.clear()
                let faults: [(DiskOperation, Int32)] = [(.write, ENOSPC), (.create, EROFS), (.rename, EIO)]
                if Double.random(in: 0..<1, using: &random) < 0.75 {
                    let (operation, code) = faults.randomElement(using: &random)!
                    diskFaults.fail(operation, errno: code)
                }
            }
            if wave > 0, Double.random(in: 0..<1, using: &random) < 0.3 {
                for replica in replicas {
                    outcome.messages += await settled(replica, label: "before restart in wave \(wave)")
                    outcome.coverage.note("store refused by a failing disk", replica.ledger.failedStores)
                    replica.redis?.shutdown()
                }
                replicas = try makeReplicas()
                outcome.coverage.note("restart")
            }
            let count = Int.random(in: 1...50, using: &random)
            let specs = (0..<count).map { _ in Self.spec(&random, world: world, replicas: replicaCount) }
            var controls: [(delay: Double, event: ControlEvent)] = []
            for control in OptionDraws.waveControls where Double.random(in: 0..<1, using: &random) < 0.12 {
                let url = ModelWorld.urls.randomElement(using: &random)!
                let event = ControlEvent(
                    control: control, replica: Int.random(in: 0..<replicaCount, using: &random), url: url)
                controls.append((Double.random(in: 0...0.03, using: &random), event))
            }
            outcome.loads += count
            var wavePicks = SplitMix64(seed: random.next())
            let (messages, coverage) = await runWave(
                specs, controls: controls, replicas: replicas, checker: checker, wave: wave, random: &wavePicks)
            outcome.messages += messages
            outcome.coverage += coverage
            if !outcome.messages.isEmpty { return outcome }
        }
        for replica in replicas {
            outcome.messages += await settled(replica, label: "at the end")
            outcome.coverage.note("store refused by a failing disk", replica.ledger.failedStores)
        }
        if diskFaults != nil { outcome.coverage.note("program on a failing disk") }
        Self.countOrigin(origin, into: &outcome.coverage)
        return outcome
    }

    static func spec(_ random: inout SplitMix64, world: ModelWorld, replicas: Int) -> LoadSpec {
        let urls = Double.random(in: 0..<1, using: &random) < 0.65 ? ModelWorld.testURLs : ModelWorld.colorURLs
        var spec = LoadSpec(url: urls.randomElement(using: &random)!)
        let draws = [0, 0, 1, 1, 2, 2, 3, 4].randomElement(using: &random)!
        OptionDraws.draw(draws, into: &spec, &random, world: world)
        if Double.random(in: 0..<1, using: &random) < 0.4 {
            spec.startDelay = Double.random(in: 0...0.04, using: &random)
        }
        if replicas > 1 { spec.replica = Int.random(in: 0..<replicas, using: &random) }
        // Some loads want the bytes alone, with the options they drew (a target shows images, so not through one).
        if Double.random(in: 0..<1, using: &random) < 0.12 {
            spec.dataOnly = true
            spec.target = nil
        }
        spec.finish()
        if let encode = spec.encode { world.noteEncode(encode, url: spec.url, partition: spec.partition) }
        return spec
    }

    /// Runs one wave: its loads and controls at their times, then checks every load.
    func runWave(
        _ specs: [LoadSpec], controls: [(delay: Double, event: ControlEvent)], replicas: [Replica],
        checker: ModelChecker, wave: Int, random: inout SplitMix64
    ) async -> ([String], ModelCoverage) {
        var coverage = ModelCoverage()
        let records = specs.map { _ in LoadRecord() }
        let targets = [ModelTarget(), ModelTarget()]
        enum Step {
            case load(Int)
            case control(Int)
        }
        var steps: [(Double, Step)] = specs.indices.map { (specs[$0].startDelay, .load($0)) }
        steps += controls.indices.map { (controls[$0].delay, .control($0)) }
        steps.sort { $0.0 < $1.0 }
        var events = controls.map(\.event)
        let reached = Locked([LoadControl: Int]())
        let begin = Date()
        for (delay, step) in steps {
            let wait = delay - Date().timeIntervalSince(begin)
            if wait > 0.001 { try? await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
            switch step {
            case .load(let index):
                let spec = specs[index]
                let record = records[index]
                let replica = replicas[spec.replica]
                record.start()
                let operation: ImageLoadOperation?
                if spec.dataOnly {
                    operation = replica.manager.loadData(with: spec.url, options: spec.options, context: spec.context) {
                        record.deliverData($0)
                    }
                } else if let target = spec.target {
                    operation = targets[target.index].setImage(
                        with: spec.url, placeholder: ModelTarget.placeholder, options: spec.options,
                        context: spec.context, manager: replica.manager, completed: { record.deliver($0) })
                } else {
                    operation = replica.manager.loadImage(with: spec.url, options: spec.options, context: spec.context)
                    {
                        record.deliver($0)
                    }
                }
                guard let operation else { continue }
                if let delay = spec.cancelAfter {
                    Task {
                        try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                        // A cancel that comes once the load's own deadline passed (a busy pool can delay this task past
                        // it; 2 ms of margin for the timer) may find it expired: that is not a cancel taking effect.
                        let late = spec.context.loadTimeout.map {
                            Date().timeIntervalSince(record.startedAt) >= $0 - 0.002
                        }
                        operation.cancel()
                        record.cancelTookEffect(operation.isCancelled && late != true)
                    }
                }
                if let change = spec.priorityChange {
                    Task {
                        try? await Task.sleep(nanoseconds: UInt64(change.after * 1e9))
                        let waiting = !operation.isFinished
                        operation.priority = change.to
                        if waiting { reached.withLock { $0[.priority, default: 0] += 1 } }
                    }
                }
            case .control(let index):
                events[index].begin = Date()
                let count = Self.use(
                    events[index].control, on: replicas[events[index].replica], url: events[index].url!,
                    random: &random)
                events[index].end = Date()
                coverage.count(events[index].control, reached: count)
            }
        }
        var messages: [String] = []
        for (index, (spec, record)) in zip(specs, records).enumerated() {
            let label = "wave \(wave) load \(index) [\(spec)]"
            guard await record.waitForFinal(timeout: 15) else {
                messages.append("\(label): no final completion within 15 s")
                continue
            }
        }
        // Nothing arrives after a final result.
        try? await Task.sleep(nanoseconds: 20_000_000)
        let targetLoads = Dictionary(grouping: specs.indices.filter { specs[$0].target != nil }) {
            specs[$0].target!.index
        }
        for (index, (spec, record)) in zip(specs, records).enumerated() {
            let label = "wave \(wave) load \(index) [\(spec)]"
            if record.finals > 1 { messages.append("\(label): \(record.finals) final completions") }
            guard record.finals > 0 else { continue }
            let target = spec.target.flatMap { targetLoads[$0.index]?.count == 1 ? targets[$0.index] : nil }
            let loads = zip(specs, records).map { $0 }
            messages += checker.check(
                index, loads: loads, controls: events, manager: replicas[spec.replica].manager, target: target,
                label: label)
            coverage.count(spec, record)
            if spec.cancelAfter != nil, record.summary.3 { coverage.reach(.cancelLoad) }
            if spec.target != nil { coverage.note("load through an ImageTarget") }
            if case .failure(let error)? = record.summary.0, error.code == .timedOut, error.stage == .request {
                coverage.note("load ended by its load timeout")
            }
            if case .success(let loaded)? = record.summary.0, spec.url.pathExtension != "timg" {
                coverage.note("success of a file with a colour profile")
                if spec.decodeOptions.convertToSRGB { coverage.note("colour conversion with lcms2") }
                if loaded.cacheType != .none { coverage.note("colour file from a cache") }
            }
            if spec.replica == 1 { coverage.note("load on the second replica") }
            if record.data?.joinedTransfer == true { coverage.note("data load that joined another load's transfer") }
            if case .success(let loaded)? = record.summary.0 {
                let signature = Signature(loaded.image)
                if let deviation = checker.reference.resampledOnly.value[signature] {
                    let format = spec.url.pathExtension
                    coverage.note(
                        "image only the decoded original's resampling gives (not a fresh decode's), \(format)")
                    let largest = "  largest sample difference from the fresh decode, \(format)"
                    coverage.cases[largest] = max(coverage.cases[largest] ?? 0, deviation)
                }
                if checker.reference.fromTruncated.value.contains(signature) {
                    coverage.note(
                        "image decoded from a truncated body\(loaded.cacheType == .none ? "" : ", from a cache")")
                }
            }
        }
        for (control, count) in reached.value { coverage.reach(control, count) }
        if ProcessInfo.processInfo.environment["MODEL_TRACE"] != nil {
            // A replay's whole story: every load and control of the wave, with times from the wave's start.
            for event in events {
                print(
                    "wave \(wave) control \(event.control) \(event.url?.lastPathComponent ?? "") replica "
                        + "\(event.replica) at \(event.begin.timeIntervalSince(begin))")
            }
            for (index, (spec, record)) in zip(specs, records).enumerated() {
                let (result, start, end, _) = record.summary
                print(
                    "wave \(wave) load \(index) [\(spec)] \(start.timeIntervalSince(begin))…\(end.timeIntervalSince(begin)): "
                        + "\(result.map { "\($0)" } ?? "-")")
            }
        }
        checker.recordVerdicts(zip(specs, records).map { $0 }, manager: { replicas[$0].manager })
        return (messages, coverage)
    }

    /// A manager over real `MemoryCache` and `DiskCache` in `directory` (and `redis`, when given), behind a
    /// ledger of cache misses, loading from the world's origin.
    static func makeReplica(
        directory: URL, world: ModelWorld, redis: RedisCache?, faults: DiskFaultInjector? = nil
    ) -> Replica {
        let memory = MemoryCache()
        var configuration = DiskCacheConfiguration(directory: directory)
        configuration.faults = faults
        let disk = DiskCache(configuration: configuration)
        let levels: [any ImageCacheProtocol] = redis.map { [memory, disk, $0] } ?? [memory, disk]
        let caches = CachesManager(levels)
        let ledger = MissLedger(caches)
        let manager = ImageManager(cache: ledger, loader: world.origin, coders: world.coders)
        manager.logHandler = { _ in }
        return Replica(manager: manager, ledger: ledger, caches: caches, memory: memory, disk: disk, redis: redis)
    }

    /// Uses a wave control on `replica` (`url` for the controls that take one); returns what it reached.
    static func use(_ control: LoadControl, on replica: Replica, url: URL, random: inout SplitMix64) -> Int {
        let origin = (replica.manager.imageLoader as? ModelOrigin)!
        switch control {
        case .cancelAllLoads:
            let running = replica.manager.running.withLock { $0.count }
            replica.manager.cancelAll()
            return running
        case .cancelAllDownloads:
            return origin.cancelAllDownloads()
        case .cancelDownloadsForURL:
            return origin.cancelDownloads(for: url)
        case .memoryLimits:
            let before = replica.memory.count
            replica.memory.costLimit = [0, 20_000, 400_000, 1 << 30].randomElement(using: &random)!
            replica.memory.countLimit = [1, 3, Int.max].randomElement(using: &random)!
            return before - replica.memory.count
        case .diskLimits:
            let before = replica.disk.totalCount()
            replica.disk.maxDiskSize = [1, 3000, 0].randomElement(using: &random)!
            replica.disk.maxDiskAge = Bool.random(using: &random) ? nil : 0.001
            if Bool.random(using: &random) { replica.disk.sweep() }
            return max(0, before - replica.disk.totalCount())
        case .downloadsAheadOfDecoding:
            let waiting = replica.manager.downloadAdmission.waitingCount
            replica.manager.maxDownloadsAheadOfDecoding = [1, 2, 3, 64].randomElement(using: &random)!
            return waiting
        case .removeFailedURLs:
            // All of them, or one: a failed one when there is one.
            let failed = ModelWorld.urls.filter { replica.manager.isFailedURL($0) }
            if Bool.random(using: &random) {
                replica.manager.removeAllFailedURLs()
                return failed.count
            }
            let removed = failed.randomElement(using: &random) ?? url
            replica.manager.removeFailedURL(removed)
            return failed.contains(removed) ? 1 : 0
        case .cacheHitPromotion:
            // On or off; reached when on (a Redis hit is then copied to the disk, a disk hit offered to memory).
            replica.caches.promotesHits = Bool.random(using: &random)
            return replica.caches.promotesHits ? 1 : 0
        case .cancelLoad, .priority:
            return 0
        }
    }

    /// Counts what the origin answered.
    static func countOrigin(_ origin: ModelOrigin, into coverage: inout ModelCoverage) {
        let answers = origin.answers
        coverage.note("origin 404 answer", answers[.notFound] ?? 0)
        coverage.note("origin 500 answer", answers[.serverError] ?? 0)
        coverage.note("origin truncated answer", answers[.truncated] ?? 0)
        coverage.note("origin no-store answer", answers[.noStore] ?? 0)
        coverage.note("origin slow answer", answers[.slow] ?? 0)
        let revalidations = origin.revalidations
        coverage.note("revalidation answered 304", revalidations[.notModified] ?? 0)
        coverage.note("revalidation answered 200 with new bytes", revalidations[.newBytes] ?? 0)
        coverage.note("revalidation answered 500", revalidations[.serverError] ?? 0)
        coverage.note("revalidation answered 404/truncated", revalidations[.failed] ?? 0)
        let effects = origin.contextEffects
        coverage.note("request rewritten by a modifier", effects.modified)
        coverage.note("body decrypted by a decryptor", effects.encrypted)
        coverage.note("body trickled in (previews possible)", effects.trickled)
        coverage.note("transfer refused by the header check", effects.rejected)
    }

    /// Waits until the manager is idle and every cache miss ended; reports what never settled.
    func settled(_ replica: Replica, label: String) async -> [String] {
        let (manager, ledger) = (replica.manager, replica.ledger)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, manager.isRunning || ledger.open != 0 {
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        var messages: [String] = []
        if manager.isRunning {
            let operations = manager.running.withLock { $0.count }
            let jobs = manager.jobs.withLock { $0.jobs.keys.sorted() }
            let admission = manager.downloadAdmission
            messages.append(
                "\(label): still running after 10 s: \(operations) operations, jobs \(jobs), downloads ahead "
                    + "\(admission.aheadCount), waiting \(admission.waitingCount)")
        }
        if ledger.open != 0 { messages.append("\(label): \(ledger.open) cache misses never ended (or ended twice)") }
        return messages
    }
}
