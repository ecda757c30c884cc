import BenchSupport
import CBaselines
import DiskCache
import Dispatch
import Foundation
import ImageCore
import ImageTransformers
import JPEGCoder
import MemoryCache

// Instruction counts of the hot paths (issue 10), for callgrind: `HotPathCounts <case> <operations>` sets the case
// up, then runs `operations` of it. run.sh runs every case twice under callgrind (a few and many operations) and
// divides the difference in instructions by the difference in operations, so set-up, warm-up and process start
// cancel out and what is left is the instructions of one operation: steady on a shared machine, unlike time.
//
// Each SDK case has a baseline case doing the least that gives the same answer:
//   memoryHit           ImageManager.loadImage (callback) of a URL in its MemoryCache   | memoryHitBare
//   memoryHitTransform  the same with a ResizeTransformer in the context                | memoryHitTransformBare
//   memoryHitAsync      `async loadImage` of a URL in its MemoryCache (in one task)        | memoryHitBare
//   diskHit             DiskCache.entry(forKey:) of a 50 KB entry (page cache warm)     | diskHitRaw (open+read)
//   decodeSmallJPEG     CodersManager.decode (probe + decode) of a 256x256 JPEG         | decodeSmallJPEGRaw

let arguments = CommandLine.arguments
guard arguments.count == 3, let operations = Int(arguments[2]), operations >= 0 else {
    FileHandle.standardError.write(Data("usage: HotPathCounts <case> <operations>\n".utf8))
    exit(64)
}

/// A loader the memory-hit cases never reach: a miss would be a broken case, not a slow one.
final class UnreachableLoader: ImageLoader {
    func canRequestImage(for url: URL) -> Bool { true }
    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        FileHandle.standardError.write(Data("HotPathCounts: a memory-hit case reached the loader\n".utf8))
        exit(70)
    }
}

/// Keeps a value alive and opaque to the optimiser.
@inline(never) @Sendable func consume<T>(_ value: T) { withExtendedLifetime(value) {} }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("HotPathCounts: \(message)\n".utf8))
    exit(1)
}

func memoryHit(transformed: Bool, bare: Bool, async: Bool = false) {
    let image = Pixels(width: 64, height: 64, channels: 4, bytes: [UInt8](repeating: 200, count: 64 * 64 * 4)).image
    let url = URL(string: "bench://images/hit.png")!
    let cache = MemoryCache()
    let manager = ImageManager(cache: cache, loader: UnreachableLoader())
    var context = ImageContext()
    if transformed { context.imageTransformer = ResizeTransformer(width: 256, height: 256) }
    guard let key = manager.cacheKey(for: url, context: context) else { fail("no cache key") }
    cache.setImage(image, forKey: key)
    if bare {
        for _ in 0..<operations { consume(cache.image(forKey: key)) }
    } else if async {
        // One task runs every load; the main thread waits (a top-level `await` would make valgrind's run of the
        // process go through Dispatch's main-queue signal thread, which callgrind cannot follow).
        let done = DispatchSemaphore(value: 0)
        Task { [context] in
            for _ in 0..<operations { consume(try? await manager.loadImage(with: url, context: context)) }
            done.signal()
        }
        done.wait()
    } else {
        for _ in 0..<operations { manager.loadImage(with: url, context: context) { consume($0) } }
    }
}

func diskHit(raw: Bool) throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webimage-hotpath-\(getpid())")
    defer { try? FileManager.default.removeItem(at: directory) }
    let cache = DiskCache(configuration: DiskCacheConfiguration(directory: directory, sweepInterval: nil))
    let payload = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    let keys = (0..<100).map { "https://example.com/images/\($0).jpg" }
    for key in keys { try cache.storeData(payload, forKey: key) }
    // Both sides read every file once before counting starts, so the page cache is warm on both.
    guard try cache.entry(forKey: keys[0])?.data == payload else { fail("DiskCache did not return the bytes") }
    if raw {
        let paths = keys.map { cache.fileURL(forKey: $0).path }
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 20)
        defer { buffer.deallocate() }
        for index in 0..<operations {
            if cb_read_file(paths[index % paths.count], buffer.baseAddress, buffer.count) < 50_000 {
                fail("raw read came back short")
            }
        }
    } else {
        for index in 0..<operations { consume(try cache.entry(forKey: keys[index % keys.count])) }
    }
}

func decodeSmallJPEG(raw: Bool) throws {
    let data = CEncode.jpeg(Inputs.photoSmall, quality: 90)
    if raw {
        var checksum: UInt32 = 0
        for _ in 0..<operations {
            let status = data.withUnsafeBytes { bytes in
                cb_jpeg_decode_fresh(bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count, 3, 0, &checksum)
            }
            if status != 0 { fail("raw decode failed: \(status)") }
        }
        consume(checksum)
    } else {
        // What every load pays: the registry's probe, then the coder.
        let coders = CodersManager(coders: [JPEGCoder.shared])
        for _ in 0..<operations { consume(try coders.decode(data, options: ImageDecodeOptions())) }
    }
}

do {
    switch arguments[1] {
    case "memoryHit": memoryHit(transformed: false, bare: false)
    case "memoryHitBare": memoryHit(transformed: false, bare: true)
    case "memoryHitAsync": memoryHit(transformed: false, bare: false, async: true)
    case "memoryHitTransform": memoryHit(transformed: true, bare: false)
    case "memoryHitTransformBare": memoryHit(transformed: true, bare: true)
    case "diskHit": try diskHit(raw: false)
    case "diskHitRaw": try diskHit(raw: true)
    case "decodeSmallJPEG": try decodeSmallJPEG(raw: false)
    case "decodeSmallJPEGRaw": try decodeSmallJPEG(raw: true)
    default: fail("unknown case \(arguments[1])")
    }
} catch {
    fail("\(error)")
}
