import Foundation
import ImageTestSupport
import Testing
import WebImage

@testable import ImageCore

/// The main line checked against a plain model (issue 21, item 6).
///
/// The reference is "fetch, decode, transform": no cache, no coalescing. Each program is a few waves of 1–50
/// concurrent loads over four URLs with random partitions, thumbnails, first-frame, a coder option applied inside
/// the decoder (`TestCoder.Tint`), transformers, revalidation, deadlines and cancels, against an origin whose
/// answers change between waves (404, 500, truncated bytes, slow,
/// `no-store`, new bytes with a new ETag), with manager restarts on the same disk directory (real `MemoryCache` and
/// `DiskCache`). For every load: exactly one final completion and nothing after it; a success has the reference's
/// image for its (URL, partition, options) at a version the origin served — never another partition's or another
/// option set's; a cancelled load completes with `cancelled`; no load outlives its deadline by more than the slack.
/// After each program: no running operation or job, and every cache miss ended once.
///
/// `MODEL_SEED=<seed>` replays one program (`make replay SEED=<seed>`); `MODEL_PROGRAMS` and `MODEL_SECONDS` bound a
/// run (CI: as many programs as fit in about two minutes).
@Suite struct MainLineModelTests {
    static let environment = ProcessInfo.processInfo.environment

    @Test("random programs against the reference model")
    func randomProgramsMatchTheModel() async throws {
        let budget = Double(Self.environment["MODEL_SECONDS"] ?? "") ?? 120
        let most = Int(Self.environment["MODEL_PROGRAMS"] ?? "") ?? 5000
        let start = Date()
        var seeds: [UInt64]
        if let replay = Self.environment["MODEL_SEED"].flatMap(UInt64.init) {
            seeds = [replay]
        } else {
            var master = SplitMix64(seed: UInt64.random(in: 1...UInt64.max >> 1))
            seeds = (0..<most).map { _ in master.next() >> 1 }
        }
        var programs = 0
        var loads = 0
        var tally = ModelProgram.Tally()
        var failed = false
        for seed in seeds {
            if seeds.count > 1, Date().timeIntervalSince(start) > budget { break }
            let failures = try await ModelProgram(seed: seed).run()
            programs += 1
            loads += failures.loads
            tally += failures.tally
            for failure in failures.messages {
                Issue.record("program seed \(seed) (replay: make replay SEED=\(seed)): \(failure)")
            }
            if !failures.messages.isEmpty {
                failed = true
                break
            }
        }
        let seconds = Int(Date().timeIntervalSince(start))
        print("MainLineModelTests: \(programs) programs, \(loads) loads in \(seconds) s; \(tally)")
        #expect(programs > 0)
        // Every case the model claims to check happened, and not only once in a while (a replay or a short run
        // need not reach them all).
        guard programs >= 100, !failed else { return }
        for (name, count, per100Programs) in tally.cases {
            #expect(
                count >= programs * per100Programs / 100,
                "\(count) \(name)s in \(programs) programs (\(per100Programs) per 100 expected): hardly reached")
        }
    }
}

/// One random program and its checks.
struct ModelProgram {
    struct Outcome {
        var loads = 0
        var messages: [String] = []
        var tally = Tally()
    }

    /// How often the cases the model claims to check happened: the loads' outcomes and the faults the origin
    /// served.
    struct Tally: CustomStringConvertible {
        /// Loads cancelled before their final result was decided, which completed with `cancelled`.
        var effectiveCancels = 0
        /// Loads that failed with `timedOut` (the origin's deadline).
        var deadlineFailures = 0
        var memoryHits = 0
        var diskHits = 0
        var downloads = 0
        /// Successes of loads with a cache partition.
        var partitionedSuccesses = 0
        var restarts = 0
        /// Answers of the origin per failing or unusual mode, and revalidations of bytes that changed.
        var notFound = 0
        var serverErrors = 0
        var truncated = 0
        var noStore = 0
        var changedETags = 0

        /// Each case, its count, and the least count per 100 programs a run must reach (about a fifth of what
        /// runs reach: a 30 s run on a loaded 2-core machine reached 262 cancels, 13 timeouts, 1,210 memory and
        /// 1,638 disk hits, 2,650 downloads, 1,641 partitioned successes, 49 restarts and 85, 75, 60, 98 and 20
        /// answers of each fault per 100 programs).
        var cases: [(name: String, count: Int, per100Programs: Int)] {
            [
                ("effective cancel", effectiveCancels, 50), ("deadline failure", deadlineFailures, 3),
                ("memory hit", memoryHits, 300), ("disk hit", diskHits, 300), ("download", downloads, 500),
                ("partitioned success", partitionedSuccesses, 300), ("restart", restarts, 10),
                ("404 answer", notFound, 15), ("500 answer", serverErrors, 15), ("truncated answer", truncated, 12),
                ("no-store answer", noStore, 15), ("revalidation of a changed ETag", changedETags, 4),
            ]
        }

        var description: String {
            "cancelled \(effectiveCancels), timed out \(deadlineFailures), memory \(memoryHits), disk \(diskHits),"
                + " downloaded \(downloads), partitioned \(partitionedSuccesses), restarts \(restarts);"
                + " origin 404 \(notFound), 500 \(serverErrors), truncated \(truncated), no-store \(noStore),"
                + " changed ETag \(changedETags)"
        }

        static func += (lhs: inout Tally, rhs: Tally) {
            lhs.effectiveCancels += rhs.effectiveCancels
            lhs.deadlineFailures += rhs.deadlineFailures
            lhs.memoryHits += rhs.memoryHits
            lhs.diskHits += rhs.diskHits
            lhs.downloads += rhs.downloads
            lhs.partitionedSuccesses += rhs.partitionedSuccesses
            lhs.restarts += rhs.restarts
            lhs.notFound += rhs.notFound
            lhs.serverErrors += rhs.serverErrors
            lhs.truncated += rhs.truncated
            lhs.noStore += rhs.noStore
            lhs.changedETags += rhs.changedETags
        }

        /// Counts one checked load.
        mutating func count(_ spec: Spec, _ record: LoadRecord) {
            let (result, _, _, cancelled) = record.summary
            switch result {
            case .success(let loaded)?:
                if loaded.cacheType == .memory { memoryHits += 1 }
                if loaded.cacheType == .disk { diskHits += 1 }
                if loaded.cacheType == .none { downloads += 1 }
                if spec.partition != nil { partitionedSuccesses += 1 }
            case .failure(let error)?:
                if cancelled, error.code == .cancelled { effectiveCancels += 1 }
                if error.code == .timedOut { deadlineFailures += 1 }
            case nil: break
            }
        }

        /// Counts what `origin` answered.
        mutating func count(_ origin: ModelOrigin) {
            let answers = origin.answers
            notFound += answers[.notFound] ?? 0
            serverErrors += answers[.serverError] ?? 0
            truncated += answers[.truncated] ?? 0
            noStore += answers[.noStore] ?? 0
            changedETags += origin.changedETags
        }
    }

    /// One load's random inputs.
    struct Spec: CustomStringConvertible {
        var url: URL
        var partition: String?
        var thumbnail: PixelSize?
        var fill = false
        var firstFrame = false
        var transformer: CompoundingTransformer.Kind?
        /// The test coder's image-changing option (``TestCoder/Tint``), applied inside the decoder.
        var tint: UInt8?
        var transformAnimated = false
        var refresh = false
        var retryFailed = false
        var deadline: Double?
        var cancelAfter: Double?
        var priority = ImageLoadPriority.normal

        var description: String {
            "\(url.lastPathComponent) partition=\(partition ?? "-") thumb=\(thumbnail.map { "\($0)" } ?? "-")"
                + "\(fill ? " fill" : "") first=\(firstFrame) transform=\(transformer.map { "\($0)" } ?? "-")"
                + "\(transformAnimated ? " all-frames" : "") tint=\(tint.map { "\($0)" } ?? "-") refresh=\(refresh) deadline=\(deadline.map { "\($0)" } ?? "-")"
                + " cancel=\(cancelAfter.map { "\($0)" } ?? "-") priority=\(priority)"
        }

        var options: ImageOptions {
            var options: ImageOptions = []
            if firstFrame { options.insert(.decodeFirstFrameOnly) }
            if transformAnimated { options.insert(.transformAnimatedImage) }
            if refresh { options.insert(.refreshCached) }
            if retryFailed { options.insert(.retryFailed) }
            if priority == .low { options.insert(.lowPriority) }
            if priority == .high { options.insert(.highPriority) }
            return options
        }

        var context: ImageContext {
            var context = ImageContext()
            if let partition { context.cachePartitionKey = partition }
            if let thumbnail {
                context.imageThumbnailPixelSize = thumbnail
                context.imagePreserveAspectRatio = !fill
            }
            if let transformer { context.imageTransformer = CompoundingTransformer(transformer) }
            if let tint { context[coderOption: TestCoder.Tint.self] = tint }
            if let deadline { context[ModelOrigin.deadline] = deadline }
            return context
        }

        var decodeOptions: ImageDecodeOptions {
            var options = ImageDecodeOptions(firstFrameOnly: firstFrame)
            options.thumbnailPixelSize = thumbnail
            options.preserveAspectRatio = !fill
            options.coderOptions[TestCoder.Tint.self] = tint
            return options
        }
    }

    /// What a delivered image is, for comparison: size, frames, and a hash of every held pixel.
    struct Signature: Hashable, CustomStringConvertible {
        var width: Int
        var height: Int
        var frames: Int
        var pixels: UInt64

        init(_ image: Image) {
            width = image.width
            height = image.height
            frames = image.frames.count
            var hash = FNV()
            for frame in image.frames { hash.add(frame.pixels.bytes) }
            pixels = hash.value
        }

        var description: String { "\(width)x\(height)x\(frames) #\(String(pixels, radix: 16).prefix(6))" }
    }

    static let urls = ["a.timg", "b.timg", "anim-c.timg", "anim-d.timg"].map { URL(string: "test://model/\($0)")! }
    static let slack = 1.0

    let seed: UInt64

    func run() async throws -> Outcome {
        var random = SplitMix64(seed: seed)
        let origin = ModelOrigin()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("model-\(seed)-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let coder = TestCoder()
        // Mostly few downloads ahead of the decoder, so loads wait for admission (by priority) and are cancelled
        // while they wait; sometimes the default.
        let downloadsAhead =
            Double.random(in: 0..<1, using: &random) < 0.75
            ? Int.random(in: 1...3, using: &random) : ImageManager.defaultMaxDownloadsAheadOfDecoding
        func makeManager() -> (ImageManager, MissLedger) {
            let ledger = MissLedger(
                CachesManager([
                    MemoryCache(), DiskCache(configuration: DiskCacheConfiguration(directory: directory)),
                ]))
            let manager = ImageManager(cache: ledger, loader: origin, coders: CodersManager(coders: [coder]))
            manager.logHandler = { _ in }
            manager.maxDownloadsAheadOfDecoding = downloadsAhead
            return (manager, ledger)
        }
        var (manager, ledger) = makeManager()
        var outcome = Outcome()
        let waves = Int.random(in: 1...4, using: &random)
        for wave in 0..<waves {
            // The origin changes between waves, and sometimes the process restarts.
            for url in Self.urls where Double.random(in: 0..<1, using: &random) < 0.3 {
                if Bool.random(using: &random) {
                    origin.bump(url)
                } else {
                    origin.set(ModelOrigin.Mode.allCases.randomElement(using: &random)!, for: url)
                }
            }
            if wave > 0, Double.random(in: 0..<1, using: &random) < 0.3 {
                outcome.messages += await settled(manager, ledger, label: "before restart in wave \(wave)")
                (manager, ledger) = makeManager()
                outcome.tally.restarts += 1
            }
            let count = Int.random(in: 1...50, using: &random)
            let specs = (0..<count).map { _ in Self.spec(&random) }
            outcome.loads += count
            outcome.messages += await runWave(
                specs, manager: manager, origin: origin, wave: wave, tally: &outcome.tally)
            if !outcome.messages.isEmpty { return outcome }
        }
        outcome.messages += await settled(manager, ledger, label: "at the end")
        outcome.tally.count(origin)
        return outcome
    }

    static func spec(_ random: inout SplitMix64) -> Spec {
        var spec = Spec(url: urls.randomElement(using: &random)!)
        if Double.random(in: 0..<1, using: &random) < 0.3 {
            spec.partition = ["tenant-1", "tenant 2"].randomElement(using: &random)
        }
        if Double.random(in: 0..<1, using: &random) < 0.4 {
            spec.thumbnail = [PixelSize(width: 10, height: 10), PixelSize(width: 16, height: 8)].randomElement(
                using: &random)
            spec.fill = Bool.random(using: &random)
        }
        spec.firstFrame = Double.random(in: 0..<1, using: &random) < 0.3
        if Double.random(in: 0..<1, using: &random) < 0.4 {
            spec.transformer = [.grow(2), .invert].randomElement(using: &random)
            spec.transformAnimated = Bool.random(using: &random)
        }
        if Double.random(in: 0..<1, using: &random) < 0.25 { spec.tint = [0x0F, 0xF0].randomElement(using: &random) }
        spec.refresh = Double.random(in: 0..<1, using: &random) < 0.15
        spec.retryFailed = Double.random(in: 0..<1, using: &random) < 0.3
        if Double.random(in: 0..<1, using: &random) < 0.3 { spec.priority = Bool.random(using: &random) ? .low : .high }
        if Double.random(in: 0..<1, using: &random) < 0.2 { spec.deadline = [0.05, 0.5].randomElement(using: &random) }
        if Double.random(in: 0..<1, using: &random) < 0.2 {
            spec.cancelAfter = Double.random(in: 0...0.02, using: &random)
        }
        return spec
    }

    /// Runs the loads of one wave at once and checks each.
    func runWave(_ specs: [Spec], manager: ImageManager, origin: ModelOrigin, wave: Int, tally: inout Tally) async
        -> [String]
    {
        let records = specs.map { _ in LoadRecord() }
        for (spec, record) in zip(specs, records) {
            record.start()
            let operation = manager.loadImage(with: spec.url, options: spec.options, context: spec.context) { result in
                record.deliver(result)
            }
            if let delay = spec.cancelAfter {
                Task {
                    try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                    operation.cancel()
                    record.cancelTookEffect(operation.isCancelled)
                }
            }
        }
        var messages: [String] = []
        for (index, (spec, record)) in zip(specs, records).enumerated() {
            let label = "wave \(wave) load \(index) [\(spec)]"
            guard await record.waitForFinal(timeout: 15) else {
                messages.append("\(label): no final completion within 15 s")
                continue
            }
            messages += check(spec, record, origin: origin, label: label)
            tally.count(spec, record)
        }
        // Nothing arrives after a final result.
        try? await Task.sleep(nanoseconds: 20_000_000)
        for (index, record) in records.enumerated() where record.finals > 1 {
            messages.append("wave \(wave) load \(index): \(record.finals) final completions")
        }
        return messages
    }

    func check(_ spec: Spec, _ record: LoadRecord, origin: ModelOrigin, label: String) -> [String] {
        var messages: [String] = []
        let (result, start, end, cancelled) = record.summary
        // A deadline is the transfer's: it runs from the origin's receipt of the request (a load may wait for a
        // place ahead of the decoder before that, as it would in a loader's own queue).
        if let deadline = spec.deadline, spec.cancelAfter == nil {
            let sent = max(
                start, origin.latestRequest(for: spec.url, partition: spec.partition, before: end) ?? start)
            let elapsed = end.timeIntervalSince(sent)
            if elapsed > deadline + Self.slack {
                messages.append("\(label): took \(elapsed) s after its request, past its \(deadline) s deadline")
            }
        }
        guard let result else { return ["\(label): no result"] }
        switch result {
        case .success(let loaded):
            if cancelled { messages.append("\(label): cancelled, yet delivered an image") }
            let got = Signature(loaded.image)
            let served = origin.served.filter { $0.url == spec.url.absoluteString && $0.partition == spec.partition }
            let expected = served.compactMap { Self.reference(spec, version: $0.version) }
            if !expected.contains(got) {
                let other = origin.served.filter { $0.url == spec.url.absoluteString }.compactMap { entry in
                    Self.reference(spec, version: entry.version, partition: entry.partition).map { (entry, $0) }
                }.first { $0.1 == got }
                messages.append(
                    "\(label): delivered \(got) (\(loaded.cacheType)); reference \(expected.map(\.description))"
                        + (other.map { "; it is partition \($0.0.partition ?? "-")'s v\($0.0.version)" } ?? ""))
            }
        case .failure(let error):
            if cancelled, error.code != .cancelled { messages.append("\(label): cancelled, completed with \(error)") }
            let failures = origin.failures(of: spec.url)
            let explained: Bool =
                switch error.code {
                case .cancelled: spec.cancelAfter != nil
                case .timedOut: spec.deadline != nil
                case .invalidDownloadStatusCode: failures.contains(.notFound) || failures.contains(.serverError)
                case .badImageData: failures.contains(.truncated)
                case .blockedURL: !spec.retryFailed && !failures.isEmpty
                default: false
                }
            if !explained { messages.append("\(label): failed with \(error), which nothing in the program explains") }
        }
        return messages
    }

    /// The reference: the origin's bytes at `version`, decoded with the load's options, then transformed.
    static func reference(_ spec: Spec, version: Int, partition: String?? = .none) -> Signature? {
        let bytes = ModelOrigin.bytes(
            url: spec.url.absoluteString, partition: partition ?? spec.partition, version: version)
        guard var image = try? TestCoder().decode(bytes, options: spec.decodeOptions) else { return nil }
        if let kind = spec.transformer, !image.isAnimated || spec.transformAnimated {
            guard let transformed = try? CompoundingTransformer(kind).transform(image, forKey: "") else { return nil }
            image = transformed
        }
        return Signature(image)
    }

    /// Waits until the manager is idle and every cache miss ended; reports what never settled.
    func settled(_ manager: ImageManager, _ ledger: MissLedger, label: String) async -> [String] {
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

/// One load's deliveries, counted.
final class LoadRecord: Sendable {
    private struct State {
        var start = Date()
        var end: Date?
        var final: Result<ImageResult, ImageError>?
        var finals = 0
        var cancelled = false
    }

    private let state = Locked(State())

    func start() { state.withLock { $0.start = Date() } }

    func deliver(_ result: Result<ImageResult, ImageError>) {
        if case .success(let loaded) = result, !loaded.isFinal { return }
        state.withLock { state in
            state.finals += 1
            if state.final == nil {
                state.final = result
                state.end = Date()
            }
        }
    }

    /// `cancel()` took effect (the final result was not decided before it).
    func cancelTookEffect(_ effective: Bool) { if effective { state.withLock { $0.cancelled = true } } }

    var finals: Int { state.withLock { $0.finals } }

    /// The final result, when the load started and ended (now if it has not), and whether a cancel took effect.
    var summary: (Result<ImageResult, ImageError>?, Date, Date, Bool) {
        state.withLock { ($0.final, $0.start, $0.end ?? Date(), $0.cancelled) }
    }

    func waitForFinal(timeout: TimeInterval) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if finals > 0 { return true }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return finals > 0
    }
}

/// The manager's cache, counting the queries that missed (each leaves a claim the manager must end) and their ends.
final class MissLedger: ImageCacheProtocol, Sendable {
    private let inner: CachesManager
    private let counts = Locked((missed: 0, ended: 0))

    init(_ inner: CachesManager) { self.inner = inner }

    /// Misses not yet ended (negative: ended more often than missed).
    var open: Int { counts.withLock { $0.missed - $0.ended } }

    func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        inner.queryImage(forKey: key, options: options, context: context, cacheType: cacheType, completion: completion)
    }

    /// The manager's claiming queries: each miss is a claim it must end once.
    func queryImageClaimingMiss(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        inner.queryImageClaimingMiss(forKey: key, options: options, context: context, cacheType: cacheType) {
            result in
            let missed: Bool
            switch result {
            case .success(let hit): missed = hit == nil || (hit?.image == nil && hit?.data == nil)
            case .failure(let error): missed = !error.isCancellation
            }
            // The manager's own recheck asks memory only; it claims nothing.
            if missed, cacheType.contains(.disk) { self.counts.withLock { $0.missed += 1 } }
            completion(result)
        }
    }

    func queryImageSync(forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType)
        -> SyncCacheQueryResult
    {
        let answer = inner.queryImageSync(forKey: key, options: options, context: context, cacheType: cacheType)
        if case .miss = answer, cacheType.contains(.disk) { counts.withLock { $0.missed += 1 } }
        return answer
    }

    func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) {
        inner.store(image, data: data, metadata: metadata, forKey: key, cacheType: cacheType, completion: completion)
    }

    func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        inner.removeImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        inner.containsImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        inner.clear(cacheType: cacheType, completion: completion)
    }

    func missEnded(forKey key: String, cacheType: ImageCacheType, outcome: CacheMissOutcome) {
        counts.withLock { $0.ended += 1 }
        inner.missEnded(forKey: key, cacheType: cacheType, outcome: outcome)
    }
}
