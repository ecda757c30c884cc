import Foundation
import ImageTestSupport
import RedisCache
import WebImage

@testable import ImageCore

/// One case of the non-interference property: on a manager (or a fleet of two sharing a redis-server), an optional
/// warm-up load W and a load A with random options from the catalog (an image load, or a data load) — then, or
/// beside A, a plain load B of the same URL. B's result must equal what B gets on a fresh manager over the same
/// origin: the same pixels, or the same failure (`blockedURL` only where the fresh manager blocked the URL too). In a
/// fleet, B (on the other replica) never waits more than a poll interval, plus slack, after A's fetch ended.
struct NonInterferenceCase {
    struct Outcome {
        var messages: [String] = []
        /// What the case was: "sequential"/"beside", "fleet", "B success"/"B failure", "blocked on both" …
        var kinds: [String] = []
        /// The catalog entries A (and W) drew, and the control used between A and B.
        var drawn: [String] = []
    }

    /// Longest a fleet waiter may still wait after the holder's fetch ended: the longest poll plus a loaded
    /// machine's slack. The lease lasts 4 s and a waiter waits at most 3 s, so a lease nobody ends is far beyond.
    static let fleetSlack = ModelProgram.coalescing.pollInterval.upperBound + 1.0

    let seed: UInt64
    let redis: ModelRedisServer?

    func run() async throws -> Outcome {
        var random = SplitMix64(seed: seed)
        let world = ModelWorld(origin: ModelWorld.makeOrigin())
        let origin = world.origin
        let url = ModelWorld.urls.randomElement(using: &random)!
        for _ in 0..<Int.random(in: 0...2, using: &random) { origin.bump(url) }
        if Double.random(in: 0..<1, using: &random) < 0.4 {
            origin.set(ModelOrigin.Mode.allCases.randomElement(using: &random)!, for: url)
        }
        origin.setTrickle(Bool.random(using: &random), for: url)
        let fleet = redis != nil && Double.random(in: 0..<1, using: &random) < 0.3
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("ni-\(seed)-\(UUID())")
        let prefix = "ni-\(seed)-\(UUID().uuidString.prefix(8)):"
        let redisCaches =
            fleet ? try (0..<2).map { _ in try redis!.cache(prefix: prefix, coalescing: ModelProgram.coalescing) } : []
        let one = ModelProgram.makeReplica(
            directory: base.appendingPathComponent("m1"), world: world, redis: redisCaches.first)
        let two =
            fleet
            ? ModelProgram.makeReplica(
                directory: base.appendingPathComponent("m2"), world: world, redis: redisCaches[1])
            : one
        let fresh = ModelProgram.makeReplica(directory: base.appendingPathComponent("fresh"), world: world, redis: nil)
        let (first, second) = (one.manager, two.manager)
        defer {
            for cache in redisCaches { cache.shutdown() }
            try? FileManager.default.removeItem(at: base)
        }
        var outcome = Outcome()
        outcome.kinds.append(fleet ? "fleet" : "one manager")

        // W, then A, with random options; B plain, after A or beside it.
        var specs: [LoadSpec] = []
        if Double.random(in: 0..<1, using: &random) < 0.4 {
            specs.append(Self.randomSpec(url, &random, world: world))
        }
        var a = Self.randomSpec(url, &random, world: world)
        // A may want the bytes alone (`loadData`), with the options it drew: B must not see the difference either.
        if Double.random(in: 0..<1, using: &random) < 0.25 {
            a.dataOnly = true
            outcome.kinds.append("A data load")
        }
        specs.append(a)
        let beside = Bool.random(using: &random)
        outcome.kinds.append(beside ? "beside" : "sequential")
        var control: LoadControl?
        if !beside, Double.random(in: 0..<1, using: &random) < 0.3 {
            control = OptionDraws.waveControls.randomElement(using: &random)!
        }
        outcome.drawn = specs.flatMap(\.drawn) + (control.map { ["control \($0)"] } ?? [])
        let label =
            "W/A [\(specs.map(\.description).joined(separator: "; "))]\(control.map { " then \($0)" } ?? "")"
            + " \(beside ? "beside" : "then") B plain of \(url.lastPathComponent) (origin \(origin.mode(of: url)), v\(origin.version(of: url)))"

        var aRecord = LoadRecord()
        for (index, spec) in specs.enumerated() {
            let record = LoadRecord()
            aRecord = record
            record.start()
            let operation =
                spec.dataOnly
                ? first.loadData(with: url, options: spec.options, context: spec.context) { record.deliverData($0) }
                : first.loadImage(with: url, options: spec.options, context: spec.context) { record.deliver($0) }
            if let delay = spec.cancelAfter {
                Task {
                    try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                    operation.cancel()
                }
            }
            if let change = spec.priorityChange {
                Task {
                    try? await Task.sleep(nanoseconds: UInt64(change.after * 1e9))
                    operation.priority = change.to
                }
            }
            let isA = index == specs.count - 1
            if isA, beside {
                try? await Task.sleep(nanoseconds: UInt64(Double.random(in: 0...0.01, using: &random) * 1e9))
                break
            }
            guard await record.waitForFinal(timeout: 20) else {
                outcome.messages.append("\(label): W or A never completed")
                return outcome
            }
        }
        if let control { _ = ModelProgram.use(control, on: one, url: url, random: &random) }
        let b = LoadRecord()
        b.start()
        second.loadImage(with: url) { b.deliver($0) }
        guard await b.waitForFinal(timeout: 20), await aRecord.waitForFinal(timeout: 20) else {
            outcome.messages.append("\(label): B or A never completed")
            return outcome
        }
        let freshB = LoadRecord()
        fresh.manager.loadImage(with: url) { freshB.deliver($0) }
        guard await freshB.waitForFinal(timeout: 20) else {
            outcome.messages.append("\(label): B on a fresh manager never completed")
            return outcome
        }
        outcome.messages += compare(b, freshB, fresh: fresh.manager, url: url, label: label, kinds: &outcome.kinds)
        if fleet {
            let waited = b.endedAt.timeIntervalSince(max(aRecord.endedAt, b.startedAt))
            if waited > Self.fleetSlack {
                outcome.messages.append(
                    "\(label): B waited \(String(format: "%.2f", waited)) s on the other replica after A's fetch ended "
                        + "(\(aRecord.summary.0.map { "\($0)" } ?? "-"))")
            }
        }
        // Every miss ends (a fleet lease with it), and stores finish before the directories go.
        for replica in fleet ? [one, two, fresh] : [one, fresh] {
            let deadline = Date().addingTimeInterval(5)
            while replica.manager.isRunning || replica.ledger.open != 0, Date() < deadline {
                try? await Task.sleep(nanoseconds: 2_000_000)
            }
            if replica.ledger.open != 0 {
                outcome.messages.append("\(label): \(replica.ledger.open) cache misses never ended (or ended twice)")
            }
        }
        return outcome
    }

    /// A random load of `url` (1–4 catalog draws, as the model's loads draw them), not through a target.
    static func randomSpec(_ url: URL, _ random: inout SplitMix64, world: ModelWorld) -> LoadSpec {
        var spec = LoadSpec(url: url)
        OptionDraws.draw(Int.random(in: 1...4, using: &random), into: &spec, &random, world: world)
        spec.finish()
        if let encode = spec.encode { world.noteEncode(encode, url: url, partition: spec.partition) }
        return spec
    }

    /// B against fresh B: the same pixels, or the same failure.
    func compare(
        _ b: LoadRecord, _ freshB: LoadRecord, fresh: ImageManager, url: URL, label: String, kinds: inout [String]
    ) -> [String] {
        guard let mine = b.summary.0, let theirs = freshB.summary.0 else { return ["\(label): no result"] }
        switch (mine, theirs) {
        case (.success(let got), .success(let expected)):
            kinds.append("B success")
            let (gotSignature, expectedSignature) = (Signature(got.image), Signature(expected.image))
            if gotSignature != expectedSignature {
                return [
                    "\(label): B got \(gotSignature) (\(got.cacheType)), a fresh manager \(expectedSignature)"
                ]
            }
        case (.failure(let error), .failure(let expected)):
            if error.code == .blockedURL {
                kinds.append("B blocked")
                if !fresh.isFailedURL(url) {
                    return ["\(label): B was blocked; a fresh manager failed with \(expected) and blocked nothing"]
                }
            } else if error.code != expected.code {
                return ["\(label): B failed with \(error), a fresh manager with \(expected)"]
            } else {
                kinds.append("B failure")
            }
        case (.failure(let error), .success(let expected)):
            return ["\(label): B failed with \(error); a fresh manager delivered \(Signature(expected.image))"]
        case (.success(let got), .failure(let expected)):
            return [
                "\(label): B delivered \(Signature(got.image)) (\(got.cacheType)); a fresh manager failed with \(expected)"
            ]
        }
        return []
    }
}
