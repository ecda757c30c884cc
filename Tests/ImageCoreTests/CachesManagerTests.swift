import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct CachesManagerTests {
    private func image(_ width: Int) -> Image {
        Image(pixels: PixelBuffer(width: width, height: 1, layout: .gray8, bytes: [UInt8](repeating: 1, count: width)))
    }

    @Test func serialQueryAsksInOrderAndStopsAtTheFirstHit() async throws {
        let first = RecordingCache()
        let second = RecordingCache()
        first.seedMemory(image(1), forKey: "k")
        second.seedMemory(image(2), forKey: "k")
        let manager = CachesManager([first, second])
        let hit = try #require(await manager.queryImage(forKey: "k"))
        #expect(hit.image?.width == 1)
        #expect(second.calls.isEmpty)
        let miss = try await manager.queryImage(forKey: "other")
        #expect(miss == nil)
        #expect(second.calls.count == 2, "a miss in the first asks the second (query + disk read)")
    }

    @Test func serialQueryWithQueryMemoryDataCollectsBytesFromTheNextCache() async throws {
        let memory = RecordingCache()
        let disk = RecordingCache()
        memory.seedMemory(image(3), forKey: "k")
        disk.seedDisk(Data([9]), forKey: "k")
        let manager = CachesManager([memory, disk])
        let hit = try #require(await manager.queryImage(forKey: "k", options: .queryMemoryData, cacheType: .all))
        #expect(hit.image?.width == 3)
        #expect(hit.data == Data([9]))
    }

    @Test func concurrentQueryReturnsTheHighestPriorityHit() async throws {
        let first = RecordingCache()
        let second = RecordingCache()
        second.seedMemory(image(2), forKey: "k")
        let manager = CachesManager([first, second])
        manager.queryPolicy = .concurrent
        #expect(try await manager.queryImage(forKey: "k")?.image?.width == 2)
        first.seedMemory(image(1), forKey: "k")
        #expect(try await manager.queryImage(forKey: "k")?.image?.width == 1)
        #expect(first.calls.count >= 2 && second.calls.count >= 2, "both asked each time")
    }

    @Test func highestAndLowestOnlyTouchOneCache() async {
        let first = RecordingCache()
        let second = RecordingCache()
        let manager = CachesManager([first, second])
        manager.storePolicy = .highestOnly
        await (try? manager.store(image(1), data: nil, forKey: "a", cacheType: .all)) ?? ()
        #expect(first.memoryImage(forKey: "a") != nil && second.memoryImage(forKey: "a") == nil)
        manager.storePolicy = .lowestOnly
        await (try? manager.store(image(1), data: nil, forKey: "b", cacheType: .all)) ?? ()
        #expect(first.memoryImage(forKey: "b") == nil && second.memoryImage(forKey: "b") != nil)
        manager.removePolicy = .lowestOnly
        await manager.removeImage(forKey: "a")
        #expect(first.memoryImage(forKey: "a") != nil)
        manager.removePolicy = .highestOnly
        await manager.removeImage(forKey: "a")
        #expect(first.memoryImage(forKey: "a") == nil)
    }

    @Test func concurrentStoreWritesEveryCacheAndReportsFailure() async {
        let good = RecordingCache()
        let bad = RecordingCache()
        bad.failStores(true)
        let manager = CachesManager([good, bad])
        await #expect(throws: ImageError.self) {
            try await manager.store(image(1), data: Data([1]), forKey: "k", cacheType: .all)
        }
        #expect(good.memoryImage(forKey: "k") != nil)
        manager.storePolicy = .serial
        bad.failStores(false)
        try? await manager.store(image(2), data: nil, forKey: "s", cacheType: .memory)
        #expect(good.memoryImage(forKey: "s") != nil && bad.memoryImage(forKey: "s") != nil)
    }

    @Test func containsAndClearFollowTheirPolicies() async {
        let first = RecordingCache()
        let second = RecordingCache()
        first.seedMemory(image(1), forKey: "k")
        second.seedDisk(Data([1]), forKey: "k")
        let manager = CachesManager([first, second])
        #expect(await manager.containsImage(forKey: "k") == .memory, "serial stops at the first cache that has it")
        manager.containsPolicy = .concurrent
        #expect(await manager.containsImage(forKey: "k") == .all, "concurrent returns the union")
        manager.clearPolicy = .highestOnly
        await manager.clear()
        #expect(await manager.containsImage(forKey: "k") == .disk)
        manager.clearPolicy = .concurrent
        await manager.clear()
        #expect(await manager.containsImage(forKey: "k") == .none)
    }
}
