import Foundation
import ImageCore

/// Issue 32, defect 12, as a property over cut points: a decode of a file cut short fails with `badImageData`, or
/// returns an image marked ``ImageMetadata/isIncomplete``, or returns exactly what the whole file gives (a decode
/// that never reads the missing bytes: the first frame of an animation). Never an unmarked image that differs from
/// the file's.
public enum TruncationCheck {
    /// Checks every cut of the file `file` makes (from a generator seeded from `TRUNCATION_SEED`, else at random,
    /// printed) with `coder`'s one-shot decode and, for a progressive coder, its incremental decoder, under each
    /// option set; prints and returns one tally per option set.
    public static func run(
        _ label: String, coder: any ImageCoder, optionSets: [ImageDecodeOptions] = [ImageDecodeOptions()],
        randomCuts: Int = 40, file: (inout SplitMix64) throws -> Data
    ) rethrows -> [Tally] {
        let seed = SplitMix64.seed(from: "TRUNCATION_SEED", label: "\(label) truncation")
        var rng = SplitMix64(seed: seed)
        let data = try file(&rng)
        let cuts = cutPoints(length: data.count, random: randomCuts, rng: &rng)
        return optionSets.enumerated().map { index, options in
            var tally = check(data, cuts: cuts) { try coder.decode($0, options: options) }
            if let progressive = coder as? any ProgressiveImageCoder {
                let incremental = checkIncremental(data, cuts: cuts, coder: progressive, options: options, rng: &rng)
                tally.violations += incremental.violations.map { "incremental: \($0)" }
            }
            tally.label = "\(label), option set \(index), seed \(seed)"
            print(tally)
            return tally
        }
    }

    /// What the decodes of the cuts gave.
    public struct Tally: CustomStringConvertible, Sendable {
        /// What was cut, and the seed.
        public var label = ""
        /// Cuts that failed with `badImageData`.
        public var rejected = 0
        /// Cuts that decoded to an image marked incomplete.
        public var flagged = 0
        /// Cuts that decoded, unmarked, to exactly the whole file's image.
        public var whole = 0
        /// Every cut that broke the rule, described.
        public var violations: [String] = []

        /// "label: n cuts: r rejected, f flagged incomplete, w whole, v violations", then the violations.
        public var description: String {
            "\(label): \(rejected + flagged + whole) cuts: \(rejected) rejected, \(flagged) flagged incomplete, "
                + "\(whole) equal to the whole file's image, \(violations.count) violations"
                + violations.map { "\n  \($0)" }.joined()
        }
    }

    /// A picture with smooth areas and noise (so encoders produce files of some size), seeded.
    public static func picture(width: Int, height: Int, layout: PixelLayout, seed: UInt64) -> PixelBuffer {
        var rng = SplitMix64(seed: seed)
        let channels = layout.bytesPerPixel
        var bytes = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                for c in 0..<channels {
                    let smooth = (x * 255 / max(1, width - 1) * (c + 1) + y * 255 / max(1, height - 1)) / (c + 2)
                    let noise = Int(rng.next() % 48) - 24
                    bytes[(y * width + x) * channels + c] = UInt8(clamping: smooth + noise)
                }
                if layout.hasAlpha { bytes[(y * width + x) * channels + channels - 1] = UInt8((x * 7 + y * 3) % 256) }
            }
        }
        return PixelBuffer(
            width: width, height: height, layout: layout, alphaMode: layout.hasAlpha ? .straight : nil, bytes: bytes)
    }

    /// An image of `frames` seeded pictures (an animation of 0.1 s frames when more than one).
    public static func image(
        frames: Int, width: Int, height: Int, layout: PixelLayout = .rgba8, seed: UInt64
    ) -> Image {
        Image(
            frames: (0..<frames).map { index in
                ImageFrame(
                    pixels: picture(width: width, height: height, layout: layout, seed: seed &+ UInt64(index)),
                    duration: frames > 1 ? 0.1 : 0)
            })
    }

    /// Cut points of a `length`-byte file: the first bytes, every one of the last 24, the middle, and `random` more
    /// drawn from `rng`.
    public static func cutPoints(length: Int, random: Int, rng: inout SplitMix64) -> [Int] {
        guard length > 1 else { return [] }
        var points: Set<Int> = [length / 2]
        for k in [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 100, 200] where k < length { points.insert(k) }
        for k in 1...min(24, length - 1) { points.insert(length - k) }
        for _ in 0..<random { points.insert(1 + Int(rng.next() % UInt64(length - 1))) }
        return points.sorted()
    }

    /// Decodes every cut of `data` with `decode` and tallies the outcomes against the whole file's image.
    public static func check(_ data: Data, cuts: [Int], decode: (Data) throws -> Image) -> Tally {
        var tally = Tally()
        let whole: Image
        do {
            whole = try decode(data)
        } catch {
            tally.violations.append("the whole file does not decode: \(error)")
            return tally
        }
        if whole.metadata.isIncomplete { tally.violations.append("the whole file's image is marked incomplete") }
        for cut in cuts {
            let label = "cut at \(cut) of \(data.count) bytes"
            do {
                let image = try decode(data.prefix(cut))
                if image.metadata.isPartial {
                    tally.violations.append("\(label): a final image marked partial")
                } else if image.metadata.isIncomplete {
                    tally.flagged += 1
                } else if sameImage(image, whole) {
                    tally.whole += 1
                } else {
                    tally.violations.append("\(label): an image not marked incomplete (\(image))")
                }
            } catch let error as ImageError where error.code == .badImageData {
                tally.rejected += 1
            } catch {
                tally.violations.append("\(label): \(error) instead of badImageData")
            }
        }
        return tally
    }

    /// ``check(_:cuts:decode:)`` through `coder`'s incremental decoder: each cut arrives in random pieces (a
    /// preview looked at after each, which must be partial), then is declared final.
    public static func checkIncremental(
        _ data: Data, cuts: [Int], coder: any ProgressiveImageCoder, options: ImageDecodeOptions,
        rng: inout SplitMix64
    ) -> Tally {
        var violations: [String] = []
        var chunkings: [Int: [Int]] = [:]
        for cut in cuts + [data.count] {
            chunkings[cut] = (0..<Int(rng.next() % 5)).map { _ in Int(rng.next() % UInt64(cut + 1)) }.sorted()
        }
        var tally = check(data, cuts: cuts) { bytes in
            let decoder = coder.makeIncrementalDecoder(options: options)
            for end in chunkings[bytes.count] ?? [] {
                decoder.update(bytes.prefix(end), isFinal: false)
                if let preview = try? decoder.currentImage(), !preview.metadata.isPartial {
                    violations.append("a preview of \(end) of \(bytes.count) bytes is not marked partial")
                }
            }
            decoder.update(bytes, isFinal: true)
            guard let image = try decoder.currentImage() else {
                throw ImageError(.badImageData, stage: .decode, message: "no final image")
            }
            return image
        }
        tally.violations += violations
        return tally
    }

    /// Same size, frame count and loop count, and equal pixels in every frame (up to 16).
    public static func sameImage(_ a: Image, _ b: Image) -> Bool {
        guard a.width == b.width, a.height == b.height, a.frameCount == b.frameCount, a.loopCount == b.loopCount
        else { return false }
        for index in 0..<min(a.frameCount, 16) {
            guard let x = try? a.frame(at: index), let y = try? b.frame(at: index), x == y else { return false }
        }
        return true
    }
}
