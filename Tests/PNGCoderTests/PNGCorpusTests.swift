import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// Checks against real files of the shared corpus: skipped when it is absent, failed when `REQUIRE_CORPUS=1`.
@Suite(.enabled(if: Corpus.shouldRun, "needs the conformance corpus ($IMAGE_CORPUS or ../shared/corpus)"))
struct PNGCorpusTests {
    static func file(_ path: String) throws -> Data {
        try Data(contentsOf: Corpus.requireRoot().appendingPathComponent(path))
    }

    /// PngSuite's basn (plain) and basi (Adam7) files hold the same pixels for every colour type and bit depth.
    @Test func pngSuiteInterlacedEqualsPlainForEveryTypeAndDepth() throws {
        let root = try Corpus.requireRoot()
        let folder = root.appendingPathComponent("png/pngsuite")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("basn") }
        #expect(names.count >= 10)
        for name in names.sorted() {
            let plain = try Data(contentsOf: folder.appendingPathComponent(name))
            let interlacedName = "basi" + name.dropFirst(4)
            guard let interlaced = try? Data(contentsOf: folder.appendingPathComponent(interlacedName)) else {
                continue
            }
            let a = try PNGCoder.shared.decode(plain, options: ImageDecodeOptions())
            let b = try PNGCoder.shared.decode(interlaced, options: ImageDecodeOptions())
            #expect(a.pixels == b.pixels, "\(name) vs \(interlacedName)")
        }
    }

    @Test func iccProfileIsReadAndWrittenBack() throws {
        let data = try Self.file("png/misc/red-blue-gradient.dcip3d65-no-chrm-no-gama.png")
        let image = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        let profile = try #require(image.metadata.iccProfile)
        #expect(profile.count > 128)
        #expect(Array(profile[36..<40]) == Array("acsp".utf8))
        let encoded = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions(effort: .fast))
        #expect(try PNGCoder.shared.decode(encoded, options: ImageDecodeOptions()).metadata.iccProfile == profile)
    }

    /// Every hostile, truncated and bomb PNG fails cleanly or decodes, in full, as a thumbnail and incrementally
    /// (this is what the AddressSanitizer run exercises).
    @Test func hostileFilesNeverCrash() throws {
        let rows = try ["hostile/png", "hostile/truncated", "hostile/bombs", "png/pngsuite"].flatMap {
            try Corpus.requireExpectations(under: $0, extensions: ["png"])
        }
        for row in rows {
            let data = try Data(contentsOf: row.url)
            for options in [
                ImageDecodeOptions(), ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 7, height: 7)),
            ] {
                do {
                    _ = try PNGCoder.shared.decode(data, options: options)
                } catch {
                    #expect(error is ImageError, "\(row)")
                }
            }
            let decoder = PNGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
            var end = 0
            while end < data.count {
                end = min(data.count, end + 97)
                decoder.update(data.prefix(end), isFinal: end == data.count)
                do { _ = try decoder.currentImage() } catch { #expect(error is ImageError, "\(row)") }
            }
        }
    }
}
