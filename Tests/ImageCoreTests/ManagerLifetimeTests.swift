import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// A manager its owner lets go of is freed with its caches and loader, whatever it loaded: a service that makes a
/// manager per tenant or per configuration must not keep every one of them (and their memory caches) alive.
@Suite struct ManagerLifetimeTests {
    /// Runs `body` on a fresh rig, drops it, and waits for the manager, cache and loader to be freed.
    private func isFreed(after body: (Rig, URL) async throws -> Void) async throws -> Bool {
        weak var manager: ImageManager?
        weak var cache: RecordingCache?
        weak var loader: ScriptedLoader?
        do {
            let rig = Rig()
            (manager, cache, loader) = (rig.manager, rig.cache, rig.loader)
            let url = testURL()
            rig.serve(url, width: 8, height: 8)
            try await body(rig, url)
            #expect(await waitUntil { !rig.manager.isRunning })
        }
        // Work-pool threads and queues may still hold the last references for a moment after the final delivery.
        return await waitUntil { manager == nil && cache == nil && loader == nil }
    }

    @Test func afterADownloadDecodeAndStore() async throws {
        let freed = try await isFreed { rig, url in _ = try await rig.load(url, options: .waitStoreCache).get() }
        #expect(freed)
    }

    @Test func afterAMemoryHitAndADiskHit() async throws {
        let freed = try await isFreed { rig, url in
            _ = try await rig.load(url, options: .waitStoreCache).get()
            _ = try await rig.load(url).get()
            await rig.cache.clear(cacheType: .memory)
            _ = try await rig.load(url).get()
        }
        #expect(freed)
    }

    @Test func afterATransformedProgressiveLoad() async throws {
        let freed = try await isFreed { rig, url in
            rig.loader.set(.progressive(TestCoder.data(width: 8, height: 8), chunks: 3), for: url)
            let context: [ImageContextOption: any Sendable] = [
                .imageTransformer: TestTransformer(width: 2, height: 2)
            ]
            _ = try await rig.load(url, options: [.progressiveLoad, .waitStoreCache], context: context).get()
        }
        #expect(freed)
    }

    @Test func afterACancelledLoad() async throws {
        let freed = try await isFreed { rig, url in
            rig.loader.hold()
            let recorder = DeliveryRecorder()
            let operation = rig.manager.loadImage(with: url, context: rig.context(), completed: recorder.handler)
            #expect(await waitUntil { rig.loader.requestCount == 1 })
            operation.cancel()
            #expect(await recorder.waitForFinal()?.error?.code == .cancelled)
            rig.loader.releaseAll()
        }
        #expect(freed)
    }
}
