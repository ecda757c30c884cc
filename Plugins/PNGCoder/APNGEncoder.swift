import Foundation
import ImageCore

/// Writes an animated ``Image`` as an APNG: every frame whole at the canvas size (dispose `none`, blend
/// `source`), the first frame as the default image (its `fcTL` before the `IDAT`), durations in milliseconds
/// (hundredths or seconds when they do not fit 16 bits), `num_plays` from the loop count.
///
/// libpng (through ``PNGEncoder``) compresses each frame as a still PNG with the options' effort and interlacing;
/// this type takes its `IDAT` payloads and rewrites them as `fdAT` with sequence numbers. All frames share one
/// IHDR, so they are converted to the narrowest layout that holds every frame. Thread-safe: pure functions.
enum APNGEncoder {
    static func encode(_ image: Image, options: ImageEncodeOptions) throws -> Data {
        let count = try image.framesWithinBudget(stage: .encode)
        guard count > 1 else { return try PNGEncoder.encode(image, options: options) }
        let layout = commonLayout(of: image)
        var out: [UInt8] = PNGChunks.signature
        var sequence: UInt32 = 0
        var canvas: PixelSize?
        for index in 0..<count {
            let frame: ImageFrame
            do {
                frame = try image.frame(at: index)
            } catch {
                throw ImageError.wrap(error, as: .encodeFailed, stage: .encode)
            }
            let pixels = converted(try PNGEncoder.prepared(frame.pixels, options: options), to: layout)
            if let canvas, canvas.width != pixels.width || canvas.height != pixels.height {
                throw ImageError(
                    .encodeFailed, stage: .encode,
                    message: "APNG: frame \(index) is \(pixels.width)x\(pixels.height), the canvas \(canvas)")
            }
            let still = try PNGEncoder.encode(
                pixels, iccProfile: index == 0 ? image.metadata.iccProfile(for: pixels.layout) ?? [] : [],
                options: options)
            let chunks = try Self.chunks(of: still)
            if index == 0 {
                canvas = PixelSize(width: pixels.width, height: pixels.height)
                // IHDR, then what libpng wrote before the data (iCCP), then acTL: all before the first IDAT.
                for chunk in chunks where chunk.type != "IDAT" && chunk.type != "IEND" {
                    out.append(contentsOf: still[chunk.whole])
                    if chunk.type == "IHDR" {
                        APNGFrameStream.appendChunk("acTL", to: &out) { out in
                            out.append(contentsOf: be32(UInt32(count)))
                            out.append(contentsOf: be32(UInt32(clamping: max(0, image.loopCount))))
                        }
                    }
                }
            }
            appendFrameControl(&out, sequence: &sequence, pixels: pixels, duration: frame.duration)
            let data = chunks.filter { $0.type == "IDAT" }.map(\.payload)
            if index == 0 {
                for range in data { out.append(contentsOf: still[range.lowerBound - 8..<range.upperBound + 4]) }
            } else {
                // One fdAT per libpng IDAT chunk (each below 2^31 bytes, as IDAT chunks are).
                for range in data {
                    APNGFrameStream.appendChunk("fdAT", to: &out) { out in
                        out.append(contentsOf: be32(sequence))
                        out.append(contentsOf: still[range])
                    }
                    sequence += 1
                }
            }
        }
        APNGFrameStream.appendChunk("IEND", to: &out)
        return Data(out)
    }

    /// The layout that holds every frame without loss: alpha if any frame has it, colour if any frame has it.
    /// Frames not held (an on-demand provider's) count as RGBA, which every SDK animation decoder produces.
    static func commonLayout(of image: Image) -> PixelLayout {
        var layouts = image.frames.map(\.pixels.layout)
        if image.frameCount > image.frames.count { layouts.append(.rgba8) }
        let alpha = layouts.contains { $0.hasAlpha }
        let color = layouts.contains { $0 == .rgb8 || $0 == .rgba8 }
        switch (color, alpha) {
        case (true, true): return .rgba8
        case (true, false): return .rgb8
        case (false, true): return .grayAlpha8
        case (false, false): return .gray8
        }
    }

    /// `pixels` (straight alpha) in `layout`, which holds at least its channels.
    static func converted(_ pixels: PixelBuffer, to layout: PixelLayout) -> PixelBuffer {
        if pixels.layout == layout { return pixels }
        let rgba = pixels.straightRGBABytes()
        let count = pixels.width * pixels.height
        let keep: [Int]
        switch layout {
        case .rgba8: keep = [0, 1, 2, 3]
        case .rgb8: keep = [0, 1, 2]
        case .grayAlpha8: keep = [0, 3]
        case .gray8: keep = [0]
        }
        var bytes = [UInt8](repeating: 0, count: count * keep.count)
        for p in 0..<count {
            for (c, source) in keep.enumerated() { bytes[p * keep.count + c] = rgba[p * 4 + source] }
        }
        return PixelBuffer(
            width: pixels.width, height: pixels.height, layout: layout, alphaMode: .straight, bytes: bytes)
    }

    /// An fcTL for a whole-canvas frame shown for `duration` seconds.
    private static func appendFrameControl(
        _ out: inout [UInt8], sequence: inout UInt32, pixels: PixelBuffer, duration: Double
    ) {
        let (numerator, denominator) = delay(duration)
        APNGFrameStream.appendChunk("fcTL", to: &out) { out in
            out.append(contentsOf: be32(sequence))
            out.append(contentsOf: be32(UInt32(pixels.width)))
            out.append(contentsOf: be32(UInt32(pixels.height)))
            out.append(contentsOf: be32(0))
            out.append(contentsOf: be32(0))
            out.append(contentsOf: [UInt8(numerator >> 8), UInt8(numerator & 0xFF)])
            out.append(contentsOf: [UInt8(denominator >> 8), UInt8(denominator & 0xFF)])
            out.append(contentsOf: [APNGFrameInfo.Dispose.none.rawValue, APNGFrameInfo.Blend.source.rawValue])
        }
        sequence += 1
    }

    /// `delay_num / delay_den` for `seconds`: milliseconds when they fit 16 bits, else hundredths, else seconds
    /// (at most 65,535 s).
    static func delay(_ seconds: Double) -> (numerator: Int, denominator: Int) {
        let value = seconds.isFinite ? max(0, seconds) : 0
        for denominator in [1000, 100, 1] {
            let numerator = (value * Double(denominator)).rounded()
            if numerator <= 65_535 { return (Int(numerator), denominator) }
        }
        return (65_535, 1)
    }

    /// The chunks of a PNG libpng just wrote: type, payload range, whole chunk range.
    private static func chunks(
        of png: [UInt8]
    ) throws(ImageError) -> [(type: String, payload: Range<Int>, whole: Range<Int>)] {
        var result: [(String, Range<Int>, Range<Int>)] = []
        var offset = 8
        while offset + 12 <= png.count {
            let length =
                Int(png[offset]) << 24 | Int(png[offset + 1]) << 16 | Int(png[offset + 2]) << 8
                | Int(png[offset + 3])
            let type = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
            guard length <= png.count - offset - 12 else { break }
            result.append((type, offset + 8..<offset + 8 + length, offset..<offset + 12 + length))
            offset += 12 + length
        }
        guard result.first?.0 == "IHDR", result.contains(where: { $0.0 == "IDAT" }) else {
            throw ImageError(.encodeFailed, stage: .encode, message: "APNG: libpng wrote no IHDR or IDAT")
        }
        return result
    }

    private static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
