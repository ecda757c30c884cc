import Foundation
import ImageCore
import ImageTransformers

extension FuzzHarness {
    /// Builds an image (size, layout, alpha mode, frames, durations) and encode options (quality, effort,
    /// lossless, progressive, maximum size, first frame only) from the front of the input, the pixels from the
    /// rest; encodes with one coder, decodes the result and checks size and frame count; PNG must round-trip
    /// exactly. Then applies a transformer whose parameters (NaN, infinities, huge sizes included) come from
    /// the input.
    public static func roundTrip(_ input: FuzzInput) {
        var reader = ByteReader(input.data)
        let coder = FuzzCoder.roundTripCoders[Int(reader.byte()) % FuzzCoder.roundTripCoders.count]
        let layouts: [PixelLayout] = [.rgba8, .rgb8, .gray8, .grayAlpha8]
        let layout = layouts[Int(reader.byte()) % layouts.count]
        let alpha: AlphaMode = reader.byte() % 2 == 0 ? .straight : .premultiplied
        let width = reader.int(1...48)
        let height = reader.int(1...48)
        let frameCount = 1 + Int(reader.byte()) % 4
        var durations: [Double] = []
        for _ in 0..<frameCount { durations.append(reader.hostileDouble(typical: 0...5)) }
        var options = ImageEncodeOptions()
        options.quality = reader.hostileDouble(typical: 0...1)
        options.effort = [EncodeEffort.fast, .balanced, .best][Int(reader.byte()) % 3]
        options.lossless = reader.byte() % 2 == 0
        options.progressive = reader.byte() % 2 == 0
        options.firstFrameOnly = reader.byte() % 4 == 0
        if reader.byte() % 3 == 0 {
            options.maxPixelSize = PixelSize(width: reader.int(-2...64), height: reader.int(-2...64))
        }
        if reader.byte() % 4 == 0 { options.maxFileSize = reader.int(0...4096) }
        let transformerChoice = reader.byte()
        let parameters = (reader.hostileDouble(typical: 0...40), reader.int(-4...96), reader.int(-4...96))
        let seed = reader.rest
        let rowBytes = width * layout.bytesPerPixel
        var frames: [ImageFrame] = []
        for index in 0..<frameCount {
            var bytes = [UInt8](repeating: 0, count: rowBytes * height)
            if !seed.isEmpty {
                for i in bytes.indices {
                    bytes[i] = seed[(i + index * 7) % seed.count] &+ UInt8(truncatingIfNeeded: index)
                }
            }
            let pixels = PixelBuffer(width: width, height: height, layout: layout, alphaMode: alpha, bytes: bytes)
            frames.append(ImageFrame(pixels: pixels, duration: durations[index]))
        }
        let image = Image(frames: frames, loopCount: Int(transformerChoice) - 100)
        encodeAndCheck(image, coder: coder, options: options)
        transform(image, choice: transformerChoice, parameters: parameters)
    }

    static func encodeAndCheck(_ image: Image, coder: FuzzCoder, options: ImageEncodeOptions) {
        let encoded: Data
        do {
            encoded = try coder.coder.encode(image, as: coder.format, options: options)
        } catch let error as ImageError {
            return _ = error
        } catch {
            fatalError("encode threw a non-ImageError: \(error)")
        }
        let decoded: Image
        do {
            decoded = try coder.coder.decode(encoded, options: ImageDecodeOptions(preloadAllFrames: true))
        } catch {
            fatalError("\(coder) cannot decode its own output: \(error)")
        }
        var expected = PixelSize(width: image.width, height: image.height)
        if let limit = options.maxPixelSize, limit.width > 0, limit.height > 0,
            expected.width > limit.width || expected.height > limit.height
        {
            let scale = min(
                Double(limit.width) / Double(expected.width), Double(limit.height) / Double(expected.height))
            expected = PixelSize(
                width: max(1, Int((Double(expected.width) * scale).rounded())),
                height: max(1, Int((Double(expected.height) * scale).rounded())))
        }
        guard decoded.width == expected.width, decoded.height == expected.height else {
            fatalError("\(coder) round trip: \(decoded.width)x\(decoded.height), expected \(expected)")
        }
        let animates = coder == .gif || coder == .webp || coder == .png || coder == .jxl
        let frames = animates && !options.firstFrameOnly ? image.frameCount : 1
        // libwebp's animation encoder merges consecutive frames it finds identical (summing their durations).
        let acceptable = coder == .webp ? 1...frames : frames...frames
        guard acceptable.contains(decoded.frameCount) else {
            fatalError("\(coder) round trip: \(decoded.frameCount) frames, expected \(acceptable)")
        }
        if coder == .png || (coder == .jxl && options.lossless),
            options.maxPixelSize == nil || (expected.width == image.width && expected.height == image.height),
            image.pixels.alphaMode != .premultiplied
        {
            // Every frame: APNG and lossless JPEG XL keep them all exactly (APNG frames are whole-canvas sources).
            for index in 0..<decoded.frameCount {
                guard let frame = try? decoded.frame(at: index), let source = try? image.frame(at: index),
                    frame.pixels.straightRGBABytes() == source.pixels.straightRGBABytes()
                else { fatalError("\(coder) round trip changed the pixels of frame \(index)") }
            }
        }
    }

    static func transform(_ image: Image, choice: UInt8, parameters: (Double, Int, Int)) {
        let (value, a, b) = parameters
        let transformer: any Transformer
        switch choice % 8 {
        case 0: transformer = ResizeTransformer(width: a, height: b, mode: .aspectFit)
        case 1: transformer = ResizeTransformer(width: a * 1_000_000_000_000, height: b, mode: .aspectFill)
        case 2: transformer = RotateTransformer(angle: value * 37, fitSize: a % 2 == 0)
        case 3: transformer = BlurTransformer(radius: value)
        case 4: transformer = RoundCornerTransformer(radius: value, borderWidth: Double(b) / 3)
        case 5: transformer = CropTransformer(x: a, y: b, width: Int(exactly: value.rounded()) ?? a, height: b)
        case 6: transformer = TintTransformer(color: RGBAColor(red: 9, green: 99, blue: 199), amount: value)
        default:
            transformer = PipelineTransformer(
                FlipTransformer(horizontal: a % 2 == 0, vertical: b % 2 == 0),
                ResizeTransformer(width: b, height: a, mode: .fill))
        }
        _ = transformer.transformerKey
        do {
            let result = try transformer.transform(image, forKey: "fuzz")
            check(result, options: ImageDecodeOptions())
        } catch let error as ImageError {
            _ = error
        } catch {
            fatalError("transformer threw a non-ImageError: \(error)")
        }
    }
}
