import Foundation
import HTTPLoader
import HTTPTestSupport
import ImageCore
import ImageTestSupport
import Synchronization
import Testing

/// Shutdown racing in-flight work: whatever the interleaving, `shutdown()` and the test server's `stop()` finish and
/// every load completes exactly once.
@Suite struct HTTPLoaderShutdownTests {
    private final class Flag: Sendable {
        let isSet = Atomic<Bool>(false)
    }

    /// Runs `body` in a task of its own and waits for it at most `seconds`, so a hang is reported, not inherited.
    private static func finishes(within seconds: Double, _ body: @escaping @Sendable () async -> Void) async -> Bool {
        let flag = Flag()
        Task {
            await body()
            flag.isSet.store(true, ordering: .releasing)
        }
        return await waitUntil(timeout: seconds) { flag.isSet.load(ordering: .acquiring) }
    }

    /// One load the property tracks: what it recorded and how to cancel or reprioritize it.
    private struct Load: Sendable {
        let recorder: LoadRecorder
        let operation: any ImageOperation
    }

    @Test func shutdownFinishesAndEveryLoadCompletesOnceWhateverItRacesWith() async throws {
        let seed = SplitMix64.seed(from: "HTTP_SHUTDOWN_SEED", label: "HTTPLoader shutdown race")
        var random = SplitMix64(seed: seed)
        let body = pngLikeBytes(count: 2000)
        for iteration in 0..<30 {
            let context = "iteration \(iteration) of seed \(seed)"
            // The last path component picks the server's behaviour, the first one spreads the keys (joins).
            let server = try await TestHTTPServer.start { request in
                switch request.path.split(separator: "/").last {
                case "stall": .stall
                case "held": .hold("gate", then: .respond(body: body))
                case "slow":
                    .chunked(headers: [], parts: [Array(body[..<100]), Array(body[100...])], intervalMilliseconds: 30)
                case "reset": .reset
                default: .respond(body: body)
                }
            }
            let maxConcurrent = Int.random(in: 1...3, using: &random)
            let timeout = Double.random(in: 0.05...0.5, using: &random)
            let loader = makeLoader {
                $0.maxConcurrentDownloads = maxConcurrent
                $0.timeout = timeout
            }
            let kinds = ["stall", "held", "slow", "reset", "ok"]
            func url(_ random: inout SplitMix64) -> URL {
                let kind = kinds[Int.random(in: 0..<kinds.count, using: &random)]
                return server.url("/\(Int.random(in: 0..<3, using: &random))/\(kind)")
            }
            let loads = Locked([Load]())
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let (operation, recorder) = startLoad(loader, url(&random))
                loads.withLock { $0.append(Load(recorder: recorder, operation: operation)) }
            }
            // A second thread keeps loading, cancelling and reprioritizing while the loader shuts down.
            var plan = SplitMix64(seed: random.next())
            let urls = (0..<12).map { _ in url(&plan) }
            let actions = (0..<12).map { _ in Int.random(in: 0..<5, using: &plan) }
            let racer = Thread {
                for (action, url) in zip(actions, urls) {
                    let current = loads.value
                    switch action {
                    case 0, 1:
                        let (operation, recorder) = startLoad(loader, url)
                        loads.withLock { $0.append(Load(recorder: recorder, operation: operation)) }
                    case 2: current.randomElement()?.operation.cancel()
                    case 3:
                        (current.randomElement()?.operation as? any PrioritizableOperation)?.priority =
                            [.low, .normal, .high].randomElement() ?? .normal
                    default: loader.cancelAllDownloads()
                    }
                    usleep(UInt32.random(in: 0...20_000))
                }
            }
            racer.start()
            try await Task.sleep(nanoseconds: UInt64.random(in: 0...200, using: &random) * 1_000_000)
            let shutDown = await Self.finishes(within: 30) { try? await loader.shutdown() }
            #expect(shutDown, "\(context): the loader's shutdown never finished")
            // The racer's last actions may come after the shutdown: those loads must fail, not hang either.
            #expect(await waitUntil { racer.isFinished }, "\(context): the racing thread never finished")
            // One deadline for all: a failing run reports every lost completion at once, not one per 10 seconds.
            _ = await waitUntil(timeout: 10) { loads.value.allSatisfy { $0.recorder.completionCount > 0 } }
            let lost = loads.value.indices.filter { loads.value[$0].recorder.completionCount == 0 }
            #expect(lost.isEmpty, "\(context): loads \(lost) never completed")
            server.open("gate")
            let stopped = await Self.finishes(within: 30) { await server.stop() }
            #expect(stopped, "\(context): the test server's stop never finished")
            for (index, load) in loads.value.enumerated() {
                #expect(load.recorder.completionCount == 1, "\(context): load \(index) completed more than once")
                #expect(load.recorder.progressAfterCompletion == 0, "\(context): progress after load \(index) ended")
            }
            if !shutDown || !stopped || !lost.isEmpty { return }  // one failing iteration is enough to replay
        }
    }
}
