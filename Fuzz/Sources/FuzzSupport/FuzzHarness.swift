import AVIFCoder
import Foundation
import GIFCoder
import ImageCore
import ImageTransformers
import JPEGCoder
import JXLCoder
import PNGCoder
import WebPCoder

/// The coders the fuzz targets exercise.
public enum FuzzCoder: CaseIterable, Sendable {
    case png, jpeg, webp, gif, avif, jxl

    var coder: any ProgressiveImageCoder {
        switch self {
        case .png: PNGCoder.shared
        case .jpeg: JPEGCoder.shared
        case .webp: WebPCoder.shared
        case .gif: GIFCoder.shared
        case .avif: AVIFCoder.shared
        case .jxl: JXLCoder.shared
        }
    }

    /// The coders whose encoders the round-trip target drives (AV1 encoding is far too slow for a fuzz loop).
    static let roundTripCoders: [FuzzCoder] = [.png, .jpeg, .webp, .gif, .jxl]

    var format: ImageFormat {
        switch self {
        case .png: .png
        case .jpeg: .jpeg
        case .webp: .webp
        case .gif: .gif
        case .avif: .avif
        case .jxl: .jxl
        }
    }
}

/// What every fuzz target runs. A crash, a sanitizer report, a non-``ImageError`` error or a broken invariant
/// (checked with `fatalError`, so libFuzzer records the input) is a finding; a clean `ImageError` is not.
///
/// Budgets are smaller than the defaults so that the fuzzer's RSS limit flags real unbounded growth rather than
/// an allowed 400 MB decode.
public enum FuzzHarness {
    /// Per-frame budget for fuzzing: 4 megapixels.
    static let budget = ImageDecodeOptions(
        maxPixelCount: 4_000_000,
        animationBudget: AnimationBudget(maxFrameCount: 2_000, maxPixelCount: 16_000_000, maxWorkPixelCount: 64_000_000)
    )

    /// Option sets a decode is tried with; the input's hash picks two.
    static func decodeOptions(_ input: inout FuzzInput) -> [ImageDecodeOptions] {
        var all: [ImageDecodeOptions] = []
        var plain = budget
        all.append(plain)
        plain.thumbnailPixelSize = PixelSize(width: 1 + input.choose(64), height: 1 + input.choose(64))
        plain.preserveAspectRatio = input.choose(2) == 0
        all.append(plain)
        var preload = budget
        preload.preloadAllFrames = true
        preload.animationBudget.onExceeded = input.choose(2) == 0 ? .fail : .firstFrameOnly
        all.append(preload)
        var first = budget
        first.firstFrameOnly = true
        first.applyOrientation = false
        first.scaleDownLimitBytes = 1 + input.choose(1 << 16)
        all.append(first)
        let a = input.choose(all.count)
        let b = (a + 1 + input.choose(all.count - 1)) % all.count
        return [all[a], all[b]]
    }

    /// Decodes with `coder` through `CodersManager.decode(_:with:options:)` (probe budget first, as the SDK does)
    /// under two option sets, then reads up to 8 frames and checks the image's invariants.
    public static func decode(_ input: FuzzInput, with coder: FuzzCoder) {
        decode(input, withCoder: coder.coder)
    }

    /// ``decode(_:with:)`` for any coder (one that is not progressive, such as `HEIFCoder`).
    public static func decode(_ input: FuzzInput, withCoder coder: any ImageCoder) {
        var input = input
        for options in decodeOptions(&input) {
            do {
                let image = try CodersManager.decode(input.data, with: coder, options: options)
                check(image, options: options)
            } catch let error as ImageError {
                _ = error
            } catch {
                fatalError("decode threw a non-ImageError: \(error)")
            }
        }
    }

    /// Feeds growing prefixes cut at input-derived points to the incremental decoder of the coder that sniffs
    /// the bytes; previews must be partial. Then the bytes cut at an input-derived point, declared final: an
    /// error, an image marked incomplete, or the whole input's image (the cut removed nothing the decode reads).
    public static func progressive(_ input: FuzzInput) {
        var input = input
        let data = input.data
        guard let coder = FuzzCoder.allCases.first(where: { $0.coder.canIncrementallyDecode(data) }) else { return }
        let options = budget
        let decoder = coder.coder.makeIncrementalDecoder(options: options)
        var end = 0
        var whole: Image?
        let steps = 1 + input.choose(12)
        for step in 0..<steps where end < data.count {
            let remaining = data.count - end
            end = step == steps - 1 ? data.count : min(data.count, end + 1 + input.choose(max(1, remaining)))
            let isFinal = end == data.count
            decoder.update(data.prefix(end), isFinal: isFinal)
            do {
                guard let image = try decoder.currentImage() else { continue }
                if !isFinal && !image.metadata.isPartial {
                    fatalError("a preview before the final bytes is not marked partial")
                }
                check(image, options: options)
                if isFinal { whole = image }
            } catch let error as ImageError {
                _ = error
            } catch {
                fatalError("incremental decode threw a non-ImageError: \(error)")
            }
        }
        if let whole, data.count > 1 { checkCut(data.prefix(1 + input.choose(data.count - 1)), whole, coder, options) }
    }

    /// A final decode of `cut`, a prefix of bytes whose decode gave `whole`, must fail with an ``ImageError``,
    /// be marked incomplete, or be `whole`'s image.
    static func checkCut(_ cut: Data, _ whole: Image, _ coder: FuzzCoder, _ options: ImageDecodeOptions) {
        let decoder = coder.coder.makeIncrementalDecoder(options: options)
        decoder.update(cut, isFinal: true)
        do {
            guard let image = try decoder.currentImage() else { fatalError("no final image and no error") }
            if image.metadata.isPartial { fatalError("a final image is marked partial") }
            if !image.metadata.isIncomplete && !sameImage(image, whole) {
                fatalError("\(cut.count) of the bytes decode to another image, not marked incomplete")
            }
        } catch let error as ImageError {
            _ = error
        } catch {
            fatalError("incremental decode threw a non-ImageError: \(error)")
        }
    }

    /// Same size and frame count, and the same pixels in the first four frames (or the same frames failing).
    static func sameImage(_ a: Image, _ b: Image) -> Bool {
        guard a.width == b.width, a.height == b.height, a.frameCount == b.frameCount else { return false }
        for index in 0..<min(a.frameCount, 4) where (try? a.frame(at: index)) != (try? b.frame(at: index)) {
            return false
        }
        return true
    }

    /// Checks what must hold for every decoded image.
    static func check(_ image: Image, options: ImageDecodeOptions) {
        guard image.frameCount >= 1, image.frames.count >= 1, image.width >= 0, image.height >= 0 else {
            fatalError("empty image")
        }
        if image.frameCount > options.maxFrameCount { fatalError("frame limit ignored: \(image.frameCount)") }
        for index in 0..<min(image.frameCount, 8) {
            do {
                let frame = try image.frame(at: index)
                let pixels = frame.pixels
                guard pixels.bytes.count >= pixels.bytesPerRow * pixels.height,
                    pixels.bytesPerRow >= pixels.width * pixels.layout.bytesPerPixel,
                    frame.duration.isFinite, frame.duration >= 0
                else { fatalError("frame \(index) breaks the PixelBuffer/ImageFrame invariant") }
            } catch let error as ImageError {
                _ = error
            } catch {
                fatalError("frame(at:) threw a non-ImageError: \(error)")
            }
        }
    }
}
