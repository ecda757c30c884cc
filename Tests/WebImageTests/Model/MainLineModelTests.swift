import Foundation
import ImageTestSupport
import Testing
import WebImage

@testable import ImageCore

/// The main line checked against a plain model (issue 21, item 6; issue 32, item 5).
///
/// The reference is "fetch, decode, transform": no cache, no coalescing (``ModelReference``). Each program is a few
/// waves of 1–50 loads over test images and real files with ICC profiles, each load drawing random entries of
/// ``OptionCatalog/all`` — every flag, context key (plugin keys included), decode option, encode option and per-load
/// control has a draw in ``OptionDraws``, and a new entry without one fails ``everyCatalogEntryHasADraw()`` — while
/// the wave's controls (cancel all loads, a loader's cancel all / by URL, runtime memory and disk limits, the
/// admission bound, removing failed URLs) run between its loads. The origin's answers change between waves (404,
/// 500, truncated bytes, slow, `no-store`, new bytes with a new ETag, bodies that trickle in), managers restart on
/// the same disk directories (real `MemoryCache` and `DiskCache`), a fifth of the programs run on a failing disk
/// (each wave, writes fail with `ENOSPC`, creates with `EROFS` or renames with `EIO`, or none: no answer may
/// change), and a quarter run two managers sharing a real redis-server through `RedisCache` with fleet coalescing.
///
/// For every load: exactly one final completion and nothing after it; a success has the reference's image for its
/// options at a version the origin served to its partition (or, from a cache, what the documented serializer wrote
/// of it); a failure is explained by the origin, the load's options, a control or a verdict that may block its URL;
/// previews go only to progressive loads, are marked partial and carry the final image's size, conversion and
/// transform; a target shows what its flags say. After each program: no running operation or job, and every cache
/// miss ended once. A coverage table (each entry × what it reached) is printed, with a floor per row.
///
/// `MODEL_SEED=<seed>` replays one program (`make replay SEED=<seed>`); `MODEL_PROGRAMS` and `MODEL_SECONDS` bound a
/// run (CI: as many programs as fit in about 100 seconds).
@Suite struct MainLineModelTests {
    static let environment = ProcessInfo.processInfo.environment
    static let registered: Void = ColorConversion.register(LCMSColorConverter.shared)

    @Test("every entry of the option catalog has a draw in the model")
    func everyCatalogEntryHasADraw() {
        let missing = OptionDraws.missing
        #expect(
            missing.isEmpty,
            "no draw in OptionDraws for \(missing.map(\.id)): give each a random non-default use in the model")
        // And no draw for an entry the catalog no longer has.
        let ids = Set(OptionDraws.catalog.map(\.id))
        let stale = OptionDraws.draws.keys.filter { !ids.contains($0) }
        #expect(stale.isEmpty, "draws for entries the catalog doesn't list: \(stale.sorted())")
    }

    @Test("random programs against the reference model")
    func randomProgramsMatchTheModel() async throws {
        _ = Self.registered
        let budget = Double(Self.environment["MODEL_SECONDS"] ?? "") ?? 100
        let most = Int(Self.environment["MODEL_PROGRAMS"] ?? "") ?? 5000
        let start = Date()
        var seeds: [UInt64]
        if let replay = Self.environment["MODEL_SEED"].flatMap(UInt64.init) {
            seeds = [replay]
        } else {
            var master = SplitMix64(seed: UInt64.random(in: 1...UInt64.max >> 1))
            seeds = (0..<most).map { _ in master.next() >> 1 }
        }
        let redis = try await ModelRedisServer.startIfInstalled()
        defer { redis?.destroy() }
        var programs = 0
        var loads = 0
        var coverage = ModelCoverage()
        var failed = false
        for seed in seeds {
            if seeds.count > 1, Date().timeIntervalSince(start) > budget { break }
            let outcome = try await ModelProgram(seed: seed, redis: redis).run()
            programs += 1
            loads += outcome.loads
            coverage += outcome.coverage
            for failure in outcome.messages {
                Issue.record("program seed \(seed) (replay: make replay SEED=\(seed)): \(failure)")
            }
            if !outcome.messages.isEmpty {
                failed = true
                break
            }
        }
        let seconds = Int(Date().timeIntervalSince(start))
        print("MainLineModelTests: \(programs) programs, \(loads) loads in \(seconds) s\n\(coverage)")
        #expect(programs > 0)
        // Every entry was drawn and reached something, and every case happened, not only once in a while (a replay
        // or a short run need not reach them all).
        guard programs >= 100, !failed else { return }
        for (id, floor) in ModelFloors.rows() {
            let row = coverage.rows[id] ?? ModelCoverage.Row()
            let value = floor.column.value(row)
            #expect(
                value * 100 >= programs * floor.per100Programs,
                "\(id): \(value) \(floor.column) in \(programs) programs (\(floor.per100Programs) per 100 expected)")
        }
        for (name, per100Programs) in ModelFloors.cases(fleet: redis != nil) {
            let count = coverage.cases[name] ?? 0
            #expect(
                count * 100 >= programs * per100Programs,
                "\(count) \(name) in \(programs) programs (\(per100Programs) per 100 expected): hardly reached")
        }
    }
}
