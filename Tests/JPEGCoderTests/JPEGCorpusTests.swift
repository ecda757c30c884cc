import Foundation
import ImageCore
import ImageTestSupport
import JPEGCoder
import Testing

/// Checks against real files of the shared corpus: skipped when it is absent, failed when `REQUIRE_CORPUS=1`.
@Suite(.enabled(if: Corpus.shouldRun, "needs the conformance corpus ($IMAGE_CORPUS or ../shared/corpus)"))
struct JPEGCorpusTests {
    /// Landscape_1...8 are the same picture stored with EXIF orientations 1-8: applied, all must look alike.
    @Test func exifOrientationSamplesAllShowUpright() throws {
        let root = try Corpus.requireRoot()
        let folder = root.appendingPathComponent("jpeg/exif-orientation")
        let options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 300, height: 300))
        let reference = try JPEGCoder.shared.decode(
            Data(contentsOf: folder.appendingPathComponent("Landscape_1.jpg")), options: options)
        #expect(reference.width == 300 && reference.height == 200)
        for n in 1...8 {
            let data = try Data(contentsOf: folder.appendingPathComponent("Landscape_\(n).jpg"))
            let raw = try JPEGCoder.shared.decode(data, options: ImageDecodeOptions(applyOrientation: false))
            #expect(raw.metadata.orientation.rawValue == n)
            #expect((raw.width == 1200) == (n >= 5), "stored size swaps for 5-8")
            let shown = try JPEGCoder.shared.decode(data, options: options)
            #expect(shown.width == 300 && shown.height == 200, "Landscape_\(n)")
            #expect(shown.metadata.orientation == .up && shown.metadata.sourceOrientation.rawValue == n)
            #expect(JPEGSamples.psnr(shown.pixels, reference.pixels) >= 20, "Landscape_\(n) upright")
        }
    }

    @Test func iccProfilesFromCorpus() throws {
        let rows = try Corpus.requireExpectations(under: "jpeg", extensions: ["jpg", "jpeg"]).filter {
            $0.verdict == .ok
        }
        var sawICC = false
        for row in rows {
            guard let image = try? JPEGCoder.shared.decode(Data(contentsOf: row.url), options: ConformanceCheck.options)
            else { continue }
            // Some test files carry made-up profiles; a real one has the 'acsp' signature at offset 36.
            if let icc = image.metadata.iccProfile, icc.count > 128, Array(icc[36..<40]) == Array("acsp".utf8) {
                sawICC = true
            }
        }
        #expect(sawICC)
    }

    /// Every hostile, truncated and bomb JPEG fails cleanly or decodes, in full, as a thumbnail and incrementally
    /// (this is what the AddressSanitizer run exercises).
    @Test func hostileFilesNeverCrash() throws {
        let rows = try ["hostile/jpeg", "hostile/truncated", "hostile/bombs", "jpeg"].flatMap {
            try Corpus.requireExpectations(under: $0, extensions: ["jpg", "jpeg"])
        }
        for row in rows {
            let data = try Data(contentsOf: row.url)
            for options in [
                ImageDecodeOptions(), ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 7, height: 7)),
            ] {
                do {
                    _ = try JPEGCoder.shared.decode(data, options: options)
                } catch {
                    #expect(error is ImageError, "\(row)")
                }
            }
            let decoder = JPEGCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
            var end = 0
            while end < data.count {
                end = min(data.count, end + max(256, data.count / 6))
                decoder.update(data.prefix(end), isFinal: end == data.count)
                do { _ = try decoder.currentImage() } catch { #expect(error is ImageError, "\(row)") }
            }
        }
    }
}
