import Foundation
import ImageTestSupport
import Testing
import WebImage

/// Non-interference, as a property (issue 32, item 6): whatever options a load A sets — any entries of
/// ``OptionCatalog/all``, drawn as the model draws them, on an image load or a data load — and whatever control runs
/// after it, a plain load B of the same URL, after A or beside it, gets what B gets on a fresh manager over the same
/// origin; in a fleet (two managers sharing a real redis-server through `RedisCache`), B on the other replica never
/// waits more than a poll interval after A's fetch ended. See ``NonInterferenceCase``.
///
/// `NI_SEED=<seed>` replays one case (`make replay SEED=<seed> SUITE=NonInterference`); `NI_CASES` and `NI_SECONDS`
/// bound a run (CI: as many cases as fit in about 60 seconds).
@Suite struct NonInterferenceTests {
    static let environment = ProcessInfo.processInfo.environment

    @Test("a plain load gets what it gets on a fresh manager, whatever another load of its URL set")
    func plainLoadsAreUnaffectedByOtherLoads() async throws {
        _ = MainLineModelTests.registered
        let budget = Double(Self.environment["NI_SECONDS"] ?? "") ?? 60
        let most = Int(Self.environment["NI_CASES"] ?? "") ?? 20_000
        let start = Date()
        var seeds: [UInt64]
        if let replay = Self.environment["NI_SEED"].flatMap(UInt64.init) {
            seeds = [replay]
        } else {
            var master = SplitMix64(seed: UInt64.random(in: 1...UInt64.max >> 1))
            seeds = (0..<most).map { _ in master.next() >> 1 }
        }
        let redis = try await ModelRedisServer.startIfInstalled()
        defer { redis?.destroy() }
        var cases = 0
        var kinds: [String: Int] = [:]
        var drawn: [String: Int] = [:]
        for seed in seeds {
            if seeds.count > 1, Date().timeIntervalSince(start) > budget { break }
            let outcome = try await NonInterferenceCase(seed: seed, redis: redis).run()
            cases += 1
            for kind in outcome.kinds { kinds[kind, default: 0] += 1 }
            for id in outcome.drawn { drawn[id, default: 0] += 1 }
            for failure in outcome.messages {
                Issue.record("case seed \(seed) (replay: make replay SEED=\(seed) SUITE=NonInterference): \(failure)")
            }
            if !outcome.messages.isEmpty { break }
        }
        let seconds = Int(Date().timeIntervalSince(start))
        let catalog = OptionDraws.catalog.map(\.id)
        let never = catalog.filter { drawn[$0] == nil }
        print(
            "NonInterferenceTests: \(cases) cases in \(seconds) s; "
                + kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                + "; A drew \(catalog.count - never.count) of \(catalog.count) catalog entries"
                + (never.isEmpty || cases < 100 ? "" : " (never: \(never.joined(separator: ", ")))"))
        #expect(cases > 0)
        // A CI-length run draws every entry for A and reaches both orders and both outcomes of B.
        guard cases >= 500 else { return }
        #expect(never.isEmpty, "entries A never drew in \(cases) cases: \(never)")
        for kind in ["beside", "sequential", "B success", "B failure", "B blocked", "A data load"] {
            #expect((kinds[kind] ?? 0) * 100 >= cases, "\(kinds[kind] ?? 0) '\(kind)' cases in \(cases)")
        }
        if redis != nil {
            #expect((kinds["fleet"] ?? 0) * 10 >= cases, "\(kinds["fleet"] ?? 0) fleet cases in \(cases)")
        }
    }
}
