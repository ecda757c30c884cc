import Foundation
import ImageCore
import Testing

@testable import ImageService

/// Results as `ImageManager` data loads (``PipelineEngine/result(forKey:work:)``): one work for the requests that ask
/// at once, a kept result answered without work, a stale one renewed by `.unchanged` without new bytes, and an entry
/// of another version made again.
@Suite struct ResultLoadTests {
    /// An engine over a fixture, and the record of a real source (the work's results are made "from" it).
    private struct Rig {
        let fixture: ServiceFixture
        let engine: PipelineEngine
        let record: EntryRecord

        static func start() async throws -> Rig {
            let image = try ServiceImages.png(width: 20, height: 20)
            let fixture = try await ServiceFixture.start { _ in
                .respond(
                    headers: [
                        ("Content-Type", "image/png"), ("ETag", "\"s1\""), ("Cache-Control", "max-age=3600"),
                    ],
                    body: image)
            }
            let engine = try #require(fixture.service.engine as? PipelineEngine)
            let source = try await engine.source(
                try SourceURL("http://127.0.0.1:\(fixture.origin.port)/source.png"),
                context: WorkContext(deadline: Deadline(seconds: 10), tracer: StageTracer(tracer: fixture.tracer)))
            return Rig(fixture: fixture, engine: engine, record: source.record)
        }

        func made(_ text: String) -> StoredResult {
            StoredResult(
                data: Data(text.utf8), contentType: "image/png", etag: "\"\(text)\"", lastModified: nil, record: record,
                level: nil)
        }
    }

    /// A work that counts its runs, waits for `gate` when given, and makes `text` (or keeps a stale result).
    private static func work(
        _ runs: Locked<[EntryRecord?]>, gate: Locked<Bool>? = nil, making made: StoredResult,
        unchanged: Bool = false
    ) -> ResultWork {
        ResultWork { stale in
            runs.withLock { $0.append(stale) }
            while let gate, !gate.value { try await Task.sleep(for: .milliseconds(2)) }
            return unchanged && stale != nil ? .unchanged(made.record) : .made(made, keep: true)
        }
    }

    @Test func requestsAskingAtOnceShareOneWorkAndAKeptResultNeedsNone() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.fixture.stop() } }
        let runs = Locked<[EntryRecord?]>([])
        let gate = Locked(false)
        let work = Self.work(runs, gate: gate, making: rig.made("one"))
        let key = "test-res-shared"
        let loads = (0..<3).map { _ in Task { try await rig.engine.result(forKey: key, work: work) } }
        var waited = 0
        while runs.value.isEmpty, waited < 2000 {
            try await Task.sleep(for: .milliseconds(5))
            waited += 1
        }
        try await Task.sleep(for: .milliseconds(300))
        gate.withLock { $0 = true }
        var answers: [LoadedResult] = []
        for load in loads { answers.append(try await load.value) }
        #expect(runs.value.count == 1, "one work for three requests")
        #expect(answers.allSatisfy { $0.stored.data == Data("one".utf8) && $0.stored.level == nil && $0.isShareable })
        #expect(answers.filter(\.joined).count == 2, "two joined the first request's load")
        let kept = try await rig.engine.result(forKey: key, work: work)
        #expect(kept.stored.level == .memory && kept.stored.etag == "\"one\"" && !kept.joined)
        #expect(EntryRecord.decode(kept.stored.record.encoded())?.sourceValidator == rig.record.sourceValidator)
        #expect(runs.value.count == 1, "a kept result is answered without work")
    }

    /// An entry this version can't read (no record) is made again and replaced, not answered.
    @Test func aKeptResultWithoutARecordIsMadeAgain() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.fixture.stop() } }
        let key = "test-res-recordless"
        let junk = Data("another version's entry".utf8)
        rig.engine.results.store(
            junk,
            metadata: CacheEntryMetadata(
                originalKey: key, contentType: "image/png", etag: "\"old\"", maxAge: 3600,
                expiresAt: Date().addingTimeInterval(3600), storedAt: Date(), size: junk.count),
            forKey: key)
        let runs = Locked<[EntryRecord?]>([])
        let work = Self.work(runs, making: rig.made("fresh"))
        let answer = try await rig.engine.result(forKey: key, work: work)
        #expect(answer.stored.data == Data("fresh".utf8) && answer.stored.level == nil)
        #expect(runs.value.count == 1)
        let kept = try await rig.engine.result(forKey: key, work: work)
        #expect(kept.stored.data == Data("fresh".utf8) && kept.stored.level == .memory)
        #expect(runs.value.count == 1, "kept with its record this time")
    }

    /// A stale result is shown to the work with its record and ETag; `.unchanged` keeps its bytes (no new ones are
    /// made) and renews it.
    @Test func aStaleResultWhoseSourceDidNotChangeIsRenewed() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.fixture.stop() } }
        let key = "test-res-stale"
        let old = rig.made("old")
        rig.engine.results.store(
            old.data,
            metadata: CacheEntryMetadata(
                originalKey: key, contentType: old.contentType, etag: old.etag, maxAge: 0,
                expiresAt: Date().addingTimeInterval(-1), storedAt: Date(), size: old.data.count,
                extendedData: old.record.encoded()),
            forKey: key)
        let runs = Locked<[EntryRecord?]>([])
        let work = Self.work(runs, making: rig.made("new"), unchanged: true)
        let renewed = try await rig.engine.result(forKey: key, work: work)
        #expect(runs.value.count == 1)
        #expect(
            runs.value.first??.sourceValidator == rig.record.sourceValidator, "the work saw the stale entry's record")
        #expect(renewed.stored.data == old.data && renewed.stored.etag == "\"old\"" && renewed.stored.level == nil)
        let fresh = try await rig.engine.result(forKey: key, work: work)
        #expect(fresh.stored.data == old.data && fresh.stored.level == .memory)
        #expect(runs.value.count == 1, "renewed: fresh again without work")
    }
}
