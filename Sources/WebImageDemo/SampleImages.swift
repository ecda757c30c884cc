import Foundation
import WebImage

/// Generates the demo's images with the SDK's own encoders: nothing is downloaded from the internet.
enum SampleImages {
    /// A smooth colour field with a few circles, `width` x `height`, RGBA or RGB.
    static func pixels(width: Int, height: Int, alpha: Bool, seed: Int = 0) -> PixelBuffer {
        let channels = alpha ? 4 : 3
        var bytes = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * channels
                let dx = Double(x - width / 2)
                let dy = Double(y - height / 2)
                let ring = (sin((dx * dx + dy * dy).squareRoot() / 18 + Double(seed)) + 1) / 2
                bytes[i] = UInt8(255 * Double(x) / Double(max(1, width - 1)))
                bytes[i + 1] = UInt8(255 * Double(y) / Double(max(1, height - 1)))
                bytes[i + 2] = UInt8(255 * ring)
                if alpha { bytes[i + 3] = UInt8(min(255, 64 + 191 * ring)) }
            }
        }
        return PixelBuffer(width: width, height: height, layout: alpha ? .rgba8 : .rgb8, bytes: bytes)
    }

    /// name → (bytes, content type).
    static func make() throws -> [String: (Data, String)] {
        let coders = CodersManager.shared
        let photo = Image(pixels: pixels(width: 1600, height: 1200, alpha: false))
        let icon = Image(pixels: pixels(width: 256, height: 256, alpha: true))
        let frames = (0..<6).map {
            ImageFrame(pixels: pixels(width: 160, height: 120, alpha: false, seed: $0), duration: 0.1)
        }
        let animation = Image(frames: frames, loopCount: 0)
        return [
            "/images/photo.jpg": (
                try coders.encode(photo, as: .jpeg, options: ImageEncodeOptions(quality: 0.85)), "image/jpeg"
            ),
            "/images/photo.webp": (
                try coders.encode(photo, as: .webp, options: ImageEncodeOptions(quality: 0.8)), "image/webp"
            ),
            "/images/icon.png": (
                try coders.encode(icon, as: .png, options: ImageEncodeOptions(effort: .fast)), "image/png"
            ),
            "/images/spinner.gif": (try coders.encode(animation, as: .gif, options: ImageEncodeOptions()), "image/gif"),
        ]
    }
}
