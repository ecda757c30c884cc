import Foundation
import HTTPTestSupport
import HTTPTypes
import ImageCore
import Testing

@testable import ImageService

/// Admission and the deadline: every origin byte is fetched holding a worker; one deadline per request bounds all
/// its work and gives the worker back when it passes.
// Serialized: two tests block a cooperative thread on purpose (a body that ignores cancellation, as a C decoder
// mid-image would); run together on a 2-core machine they took both threads of the cooperative pool, and nothing
// was left to fire the deadline they test.
@Suite(.serialized) struct AdmissionAndDeadlineTests {
    /// A conditional request on a miss needs the source, so it takes a worker like any other: with one worker busy
    /// and no queue, it is refused at once and makes no origin request.
    @Test func conditionalRequestsOnAMissTakeAWorker() async throws {
        let image = try ServiceImages.png(width: 40, height: 40)
        let fixture = try await ServiceFixture.start({
            $0.workers = 1
            $0.queueLimit = 0
        }) { request in
            let answer = ServerAction.respond(headers: [("Content-Type", "image/png")], body: image)
            return request.path == "/held.png" ? .hold("release", then: answer) : answer
        }
        defer { Task { await fixture.stop() } }
        async let held = fixture.get("/held.png")
        #expect(await fixture.origin.waitUntil { $0.requests.count == 1 })
        let conditional = await fixture.get("/other.png", headers: [.ifNoneMatch: "\"old\""])
        #expect(conditional.status == .tooManyRequests)
        #expect(conditional.headers[.retryAfter] == "1")
        #expect(fixture.origin.requests(to: "/other.png").isEmpty)
        fixture.origin.open("release")
        #expect(await held.status == .ok)
    }

    /// At the deadline the answer is 504, the worker is free again before the answer returns, and the origin
    /// transfer is cut (the origin sees its response abandoned).
    @Test func theDeadlineFreesTheWorkerAndCutsTheTransfer() async throws {
        let fixture = try await ServiceFixture.start({
            $0.workers = 1
            $0.requestTimeout = 0.5
        }) { _ in .stall }
        defer { Task { await fixture.stop() } }
        let answer = await fixture.get("/stall.png")
        #expect(answer.status == .gatewayTimeout)
        #expect(fixture.service.load.running == 0)
        #expect(fixture.counter("rejected_total", [("reason", "deadline")]) == 1)
        #expect(await fixture.origin.waitUntil(seconds: 10) { $0.connectionsClosed >= 1 })
    }

    /// The deadline bounds every redirect hop: a chain whose third hop stalls is cut at the request's deadline,
    /// though a hop alone may take 30 s.
    @Test func theDeadlineBoundsEveryHop() async throws {
        let fixture = try await ServiceFixture.start({
            $0.requestTimeout = 0.6
            $0.originTimeout = 30
        }) { request in
            guard let hop = Int(request.path.dropFirst(4)), hop < 2 else { return .stall }
            return .respond(status: .found, headers: [("Location", "/hop\(hop + 1)")])
        }
        defer { Task { await fixture.stop() } }
        let answer = await fixture.get("/hop0")
        #expect(answer.status == .gatewayTimeout)
        #expect(fixture.service.load.running == 0)
        #expect(fixture.origin.requests(to: "/hop2").count == 1)
    }

    /// The run primitive itself: a body that ignores cancellation can't hold the answer past the deadline.
    @Test func aBodyThatIgnoresCancellationDoesNotDelayTheAnswer() async throws {
        let gate = Locked(false)
        let deadline = Deadline(seconds: 0.2)
        await #expect(throws: DeadlineExceeded.self) {
            try await deadline.run {
                // Busy-waits without ever checking for cancellation, until the test lets it go.
                while !gate.value { usleep(1000) }
                return 1
            }
        }
        gate.withLock { $0 = true }
    }

    /// Requests for one result share one load (the first one's work); a request that leaves stops waiting at once
    /// and the work goes on for the others; when the last one left, the work is cancelled: its worker is given back
    /// and its origin transfer cut.
    @Test func aResultLoadEndsWithItsLastRequest() async throws {
        let fixture = try await ServiceFixture.start({
            $0.workers = 2
            $0.originTimeout = 30
        }) { _ in .stall }
        defer { Task { await fixture.stop() } }
        let first = Task { await fixture.get("/held.png") }
        #expect(await fixture.origin.waitUntil { $0.requests.count == 1 })
        let second = Task { await fixture.get("/held.png") }
        // The second request joins the first one's load: no second worker, no second origin request.
        try await Task.sleep(for: .milliseconds(300))
        #expect(fixture.service.load.running == 1)
        first.cancel()
        _ = await first.value
        try await Task.sleep(for: .milliseconds(300))
        #expect(fixture.service.load.running == 1, "the second request still waits on the work")
        #expect(await fixture.origin.waitUntil(seconds: 0) { $0.connectionsClosed == 0 }, "the transfer goes on")
        second.cancel()
        _ = await second.value
        var waited = 0
        // At once (the origin's own timeout, 30 s, would end it much later).
        while fixture.service.load.running > 0, waited < 400 {
            try await Task.sleep(for: .milliseconds(5))
            waited += 1
        }
        #expect(fixture.service.load.running == 0, "the worker is given back")
        #expect(await fixture.origin.waitUntil(seconds: 2) { $0.connectionsClosed >= 1 }, "the transfer is cut")
        #expect(fixture.origin.requests(to: "/held.png").count == 1, "one origin request for both")
    }

    /// A worker held by a cancelled task is given back at the cancellation, not when its body returns.
    @Test func aCancelledWorkerIsGivenBackAtOnce() async throws {
        let pool = WorkerPool(workers: 1, queueLimit: 0)
        let entered = Locked(false)
        let release = Locked(false)
        let holder = Task {
            try await pool.withWorker {
                entered.withLock { $0 = true }
                // Ignores cancellation, as a C decoder mid-image would.
                while !release.value { usleep(1000) }
            }
        }
        while !entered.value { try await Task.sleep(for: .milliseconds(2)) }
        #expect(pool.counts.running == 1)
        holder.cancel()
        #expect(pool.counts.running == 0)
        release.withLock { $0 = true }
        _ = await holder.result
    }
}
