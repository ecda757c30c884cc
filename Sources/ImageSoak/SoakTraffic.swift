import Foundation
import WebImage

/// One kind of load the soak mixes, with its weight and what a correct outcome is.
enum LoadKind: String, CaseIterable, Sendable {
    /// A photo from a small hot set: memory or disk hits after the first load.
    case hit
    /// A photo under a URL never asked before: download, decode, disk store (and sweeps, the disk being small).
    case miss
    /// An animated GIF through a 50x50 resize with `.transformAnimatedImage`: every frame at most 50x50.
    case animatedThumbnail
    /// A dripping download that completes.
    case slow
    /// A dripping download cancelled mid-flight.
    case cancelSlow
    /// A stalled download cancelled mid-flight.
    case cancelStall
    /// Half a body, then the connection closes.
    case truncated
    /// Bytes that are no image.
    case garbage
    /// A 65535x65535 PNG header on a 4 MiB body.
    case bomb
    /// A 500.
    case serverError

    /// Relative frequency in the mix.
    var weight: Int {
        switch self {
        case .hit: 30
        case .miss: 18
        case .animatedThumbnail: 5
        case .slow: 4
        case .cancelSlow: 8
        case .cancelStall: 6
        case .truncated: 6
        case .garbage: 6
        case .bomb: 6
        case .serverError: 6
        }
    }

    static func pick(_ generator: inout SplitMix, from kinds: [LoadKind]) -> LoadKind {
        var roll = Int(generator.next() % UInt64(kinds.reduce(0) { $0 + $1.weight }))
        for kind in kinds {
            if roll < kind.weight { return kind }
            roll -= kind.weight
        }
        return .hit
    }
}

/// Counts of what the traffic did, and every wrong outcome it saw.
struct TrafficTally: Sendable {
    var started = 0
    var completed = 0
    var byKind: [LoadKind: Int] = [:]
    /// Summed wall time of the completed loads of each kind.
    var timeByKind: [LoadKind: Duration] = [:]
    var outcomes: [String: Int] = [:]
    var wrong: [String] = []
}

/// Loads in flight, with their start times, so a load that never completes is noticed while the run goes on.
final class InFlightRegistry: Sendable {
    private let state = Locked((next: 0, started: [Int: (kind: LoadKind, url: String, at: ContinuousClock.Instant)]()))

    func begin(_ kind: LoadKind, _ url: URL) -> Int {
        state.withLock { state in
            state.next += 1
            state.started[state.next] = (kind, url.absoluteString, .now)
            return state.next
        }
    }

    func end(_ id: Int) { state.withLock { _ = $0.started.removeValue(forKey: id) } }

    var count: Int { state.withLock { $0.started.count } }

    /// Loads started longer ago than `limit`, oldest first.
    func overdue(_ limit: Duration) -> [String] {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.started.values.filter { now - $0.at > limit }.sorted { $0.at < $1.at }.map {
                "\($0.kind.rawValue) \($0.url) pending for \(now - $0.at)"
            }
        }
    }
}

/// Runs `workers` loops of mixed loads against the soak server through one manager until `deadline`.
struct SoakTraffic: Sendable {
    let manager: ImageManager
    let base: URL
    let workers: Int
    let seed: UInt64
    let kinds: [LoadKind]
    let tally = Locked(TrafficTally())
    let inFlight = InFlightRegistry()
    private let uniqueIDs = Locked(0)

    init(manager: ImageManager, base: URL, workers: Int, seed: UInt64, kinds: [LoadKind] = LoadKind.allCases) {
        self.kinds = kinds
        self.manager = manager
        self.base = base
        self.workers = workers
        self.seed = seed
    }

    func run(until deadline: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var generator = SplitMix(seed: seed &+ UInt64(worker) &* 0x1000_0001)
                    while ContinuousClock.now < deadline {
                        await runOne(LoadKind.pick(&generator, from: kinds), &generator)
                        // Memory hits complete synchronously: without a yield, eight workers would keep the
                        // cooperative pool's threads from everything else (the watchdog, the progress lines).
                        await Task.yield()
                    }
                }
            }
        }
    }

    private func unique() -> Int {
        uniqueIDs.withLock {
            $0 += 1; return $0
        }
    }

    private func url(_ route: SoakServer.Route, _ number: Int) -> URL {
        base.appendingPathComponent(route.rawValue).appendingPathComponent("\(number)")
    }

    private func runOne(_ kind: LoadKind, _ generator: inout SplitMix) async {
        var context = ImageContext()
        var options: ImageOptions = []
        var cancelAfter: Duration?
        let target: URL
        switch kind {
        case .hit: target = url(.photo, Int(generator.next() % 24))
        case .miss: target = url(.photo, 1_000_000 + unique())
        case .animatedThumbnail:
            target = url(.anim, Int(generator.next() % 40))
            context.imageTransformer = ResizeTransformer(width: 50, height: 50)
            options.insert(.transformAnimatedImage)
        case .slow: target = url(.slow, unique())
        case .cancelSlow:
            target = url(.slow, unique())
            cancelAfter = .milliseconds(Int(generator.next() % 600))
        case .cancelStall:
            target = url(.stall, unique())
            cancelAfter = .milliseconds(20 + Int(generator.next() % 400))
        case .truncated: target = url(.truncated, unique())
        case .garbage: target = url(.garbage, unique())
        case .bomb: target = url(.bomb, unique())
        case .serverError: target = url(.error, unique())
        }
        let id = inFlight.begin(kind, target)
        tally.withLock {
            $0.started += 1
            $0.byKind[kind, default: 0] += 1
        }
        let start = ContinuousClock.now
        let result = await load(target, options: options, context: context, cancelAfter: cancelAfter)
        inFlight.end(id)
        let verdict = Self.judge(kind, result)
        tally.withLock { tally in
            tally.completed += 1
            tally.timeByKind[kind, default: .zero] += ContinuousClock.now - start
            tally.outcomes[verdict.outcome, default: 0] += 1
            if let wrong = verdict.wrong, tally.wrong.count < 50 {
                tally.wrong.append("\(kind.rawValue) \(target.path): \(wrong)")
            }
        }
    }

    /// One load through the callback API (so it can be cancelled mid-flight); the final result.
    private func load(
        _ url: URL, options: ImageOptions, context: ImageContext, cancelAfter: Duration?
    ) async -> Result<ImageResult, ImageError> {
        let operation = Locked<ImageLoadOperation?>(nil)
        return await withCheckedContinuation { continuation in
            let started = manager.loadImage(with: url, options: options, context: context) { result in
                if case .success(let value) = result, !value.isFinal { return }
                continuation.resume(returning: result)
            }
            operation.withLock { $0 = started }
            if let cancelAfter {
                Task {
                    try? await Task.sleep(for: cancelAfter)
                    operation.withLock { $0 }?.cancel()
                }
            }
        }
    }

    /// The outcome's name, and what was wrong with it if it is not what a user must get for `kind`.
    static func judge(_ kind: LoadKind, _ result: Result<ImageResult, ImageError>) -> (outcome: String, wrong: String?)
    {
        switch result {
        case .success(let value):
            let image = value.image
            let outcome = "success(\(value.cacheType))"
            switch kind {
            case .hit, .miss, .slow, .cancelSlow:
                let right = image.width == SoakServer.photoWidth && image.height == SoakServer.photoHeight
                return (outcome, right ? nil : "a \(image.width)x\(image.height) image, not the 320x240 photo")
            case .animatedThumbnail:
                let right = image.width <= 50 && image.height <= 50 && image.width > 0 && image.frameCount == 12
                return (
                    outcome,
                    right
                        ? nil
                        : "\(image.frameCount) frames of \(image.width)x\(image.height) for 12 frames within 50x50"
                )
            case .cancelStall, .truncated, .garbage, .bomb, .serverError:
                return (outcome, "an image (\(image.width)x\(image.height)) where none exists")
            }
        case .failure(let error):
            let outcome = "failure(\(error.code))"
            switch kind {
            case .hit, .miss, .slow, .animatedThumbnail:
                return (outcome, "failed: \(error)")
            case .cancelSlow, .cancelStall:
                return (outcome, error.code == .cancelled ? nil : "a cancelled load ended with \(error)")
            case .bomb:
                return (outcome, error.code == .imageTooLarge ? nil : "a decompression bomb ended with \(error)")
            case .truncated, .garbage, .serverError:
                return (outcome, error.code == .cancelled ? "cancelled though nobody cancelled it" : nil)
            }
        }
    }
}
