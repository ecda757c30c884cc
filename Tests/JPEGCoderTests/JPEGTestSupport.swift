import Foundation
import ImageCore

/// Synthetic images and a PSNR measure for the JPEG tests.
enum JPEGSamples {
    /// A smooth RGB gradient (what JPEG is good at).
    static func gradient(width: Int, height: Int) -> PixelBuffer {
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                bytes[i] = UInt8(x * 255 / max(1, width - 1))
                bytes[i + 1] = UInt8(y * 255 / max(1, height - 1))
                bytes[i + 2] = UInt8((x + y) * 255 / max(1, width + height - 2))
            }
        }
        return PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes)
    }

    /// Peak signal-to-noise ratio in dB between two buffers of the same size and layout.
    static func psnr(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
        precondition(a.width == b.width && a.height == b.height && a.layout == b.layout)
        var sum = 0.0
        let channels = a.layout.bytesPerPixel
        for y in 0..<a.height {
            for i in 0..<(a.width * channels) {
                let d = Double(a.bytes[y * a.bytesPerRow + i]) - Double(b.bytes[y * b.bytesPerRow + i])
                sum += d * d
            }
        }
        let mse = sum / Double(a.width * a.height * channels)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// Mean of channel `c` over a rectangle.
    static func mean(_ p: PixelBuffer, x: Range<Int>, y: Range<Int>, channel c: Int) -> Double {
        var sum = 0
        for row in y { for col in x { sum += Int(p.bytes[row * p.bytesPerRow + col * p.layout.bytesPerPixel + c]) } }
        return Double(sum) / Double(x.count * y.count)
    }
}
