import Foundation
import ImageCore
import JXLCoder
import Testing

/// libjxl's butteraugli behind ``PerceptualMetric``, and JPEG XL's native distance target.
@Suite("Butteraugli and the JPEG XL distance target")
struct ButteraugliMetricTests {
    static func photoLike(width: Int, height: Int, layout: PixelLayout = .rgb8) -> PixelBuffer {
        let channels = layout.bytesPerPixel
        var bytes = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                let base = (y * width + x) * channels
                for c in 0..<min(3, channels) {
                    let wave = sin(Double(x) * 0.21 + Double(c)) * cos(Double(y) * 0.17 - Double(c))
                    bytes[base + c] = UInt8(128 + 100 * wave)
                }
                if channels == 4 { bytes[base + 3] = UInt8((x * 255) / max(1, width - 1)) }
            }
        }
        return PixelBuffer(
            width: width, height: height, layout: layout, alphaMode: layout.hasAlpha ? .straight : nil, bytes: bytes)
    }

    @Test func identicalPixelsAreAtDistanceZeroAndChangesAreNot() throws {
        let metric = ButteraugliMetric.shared
        let image = Self.photoLike(width: 64, height: 48)
        #expect(try metric.distance(from: image, to: image) == 0)
        var changed = image
        changed.withUnsafeMutableBytes { bytes in
            for index in stride(from: 0, to: bytes.count, by: 97) { bytes[index] = bytes[index] &+ 40 }
        }
        let small = try metric.distance(from: image, to: changed)
        #expect(small > 0)
        changed.withUnsafeMutableBytes { bytes in
            for index in stride(from: 0, to: bytes.count, by: 7) { bytes[index] = bytes[index] &+ 90 }
        }
        #expect(try metric.distance(from: image, to: changed) > small)
        // Straight RGBA with real transparency goes through libjxl's alpha path (black and white backgrounds).
        let translucent = Self.photoLike(width: 64, height: 48, layout: .rgba8)
        #expect(try metric.distance(from: translucent, to: translucent) == 0)
        #expect(metric.name == "butteraugli")
    }

    @Test func mismatchedOrEmptyBuffersAreEncodeFailed() throws {
        let metric = ButteraugliMetric.shared
        let image = Self.photoLike(width: 16, height: 16)
        for other in [Self.photoLike(width: 15, height: 16), PixelBuffer(width: 0, height: 0, layout: .rgb8)] {
            let error = try #require(throws: ImageError.self) { try metric.distance(from: image, to: other) }
            #expect(error.code == .encodeFailed)
        }
        let empty = PixelBuffer(width: 0, height: 0, layout: .rgb8)
        #expect(throws: ImageError.self) { try metric.distance(from: empty, to: empty) }
    }

    @Test func jpegXLEncodesToTheDistanceNativelyInOneEncode() throws {
        let image = Image(pixels: Self.photoLike(width: 96, height: 64))
        var sizes: [Int] = []
        for distance in [4.0, 1.0] {
            let target = PerceptualTarget(maxDistance: distance)
            let encoded = try JXLCoder.shared.encodeWithReport(
                image, as: .jxl, options: ImageEncodeOptions(effort: .fast, perceptualTarget: target))
            let report = try #require(encoded.perceptual)
            #expect(report.metric == "jxl-distance" && report.encodes == 1 && report.distance == nil)
            #expect(report.meetsTarget == nil)
            #expect(encoded.quality == report.quality)
            // cjxl's mapping run backwards: distance 1 is quality 90, distance 4 about 56.7.
            #expect(abs(report.quality - (100 - (distance - 0.1) / 0.09) / 100) < 1e-9)
            #expect(try JXLCoder.shared.decode(encoded.data, options: ImageDecodeOptions()).width == 96)
            sizes.append(encoded.data.count)
        }
        #expect(sizes[1] > sizes[0], "a smaller distance costs more bytes: \(sizes)")
    }
}
