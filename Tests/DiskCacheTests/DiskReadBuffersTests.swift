import Foundation
import ImageCore
import ImageTestSupport
import Testing

@_spi(Fuzzing) @testable import DiskCache

/// The pool of read buffers behind hits: bounded, and a buffer is reused only after the `Data` holding it is gone.
@Suite("DiskCache read buffers")
struct DiskReadBuffersTests {
    @Test("size classes are powers of two from 4 KiB to 1 MiB; larger reads are not pooled")
    func sizeClasses() {
        #expect(DiskReadBuffers.sizeClass(for: 0) == 0)
        #expect(DiskReadBuffers.sizeClass(for: 4096) == 0)
        #expect(DiskReadBuffers.sizeClass(for: 4097) == 1)
        #expect(DiskReadBuffers.sizeClass(for: 50_001) == 4)  // 64 KiB
        #expect(DiskReadBuffers.sizeClass(for: 1 << 20) == 8)
        #expect(DiskReadBuffers.sizeClass(for: (1 << 20) + 1) == nil)
        let (large, largeClass) = DiskReadBuffers.take((1 << 20) + 1)
        #expect(largeClass == -1)
        DiskReadBuffers.release(large, sizeClass: largeClass)
    }

    @Test("a released buffer is taken again; at most a few per class are kept")
    func reuseAndBound() {
        // A class no other test reads files of (1 MiB).
        let taken = (0..<5).map { _ in DiskReadBuffers.take(700_000) }
        #expect(Set(taken.map(\.sizeClass)) == [8])
        #expect(Set(taken.map { UInt(bitPattern: $0.buffer) }).count == 5)
        for (buffer, sizeClass) in taken { DiskReadBuffers.release(buffer, sizeClass: sizeClass) }
        #expect(DiskReadBuffers.keptCount(8) == DiskReadBuffers.buffersPerClass, "the rest went back to malloc")
        let kept = Set(taken.prefix(DiskReadBuffers.buffersPerClass).map { UInt(bitPattern: $0.buffer) })
        let again = (0..<DiskReadBuffers.buffersPerClass).map { _ in DiskReadBuffers.take(700_000) }
        #expect(Set(again.map { UInt(bitPattern: $0.buffer) }) == kept, "the kept buffers are taken again")
        #expect(DiskReadBuffers.keptCount(8) == 0)
        for (buffer, sizeClass) in again { DiskReadBuffers.release(buffer, sizeClass: sizeClass) }
    }

    @Test("bytes of a hit stay intact while later hits of other entries reuse buffers")
    func hitsDoNotShareLiveBuffers() throws {
        let cache = DiskTest.cache()
        defer { DiskTest.removeDirectory(cache.directory) }
        let bodies = (0..<8).map { CacheFixtures.bytes(count: 40_000 + $0, seed: UInt64($0) + 10) }
        for (index, body) in bodies.enumerated() { try cache.storeData(body, forKey: "k\(index)") }
        var held: [Data] = []
        for round in 0..<4 {
            for index in bodies.indices {
                let data = try #require(try cache.entry(forKey: "k\(index)")?.data)
                if round == 0 { held.append(data) }
            }
        }
        for (index, data) in held.enumerated() {
            #expect(data == bodies[index], "hit \(index) changed under its holder")
        }
    }
}
