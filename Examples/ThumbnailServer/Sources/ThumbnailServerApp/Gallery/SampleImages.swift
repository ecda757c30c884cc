import Foundation
import WebImage

/// Images the server makes at start-up and serves under `/samples/`, so the gallery and the tests have a
/// local origin (and a fresh machine needs no internet).
enum SampleImages {
    /// name → (bytes, content type)
    static func make() throws -> [String: (data: Data, contentType: String)] {
        let options = ImageEncodeOptions(quality: 0.9)
        return [
            "photo.jpg": (
                try JPEGCoder.shared.encode(landscape(width: 960, height: 640), as: .jpeg, options: options),
                "image/jpeg"
            ),
            "badge.png": (try PNGCoder.shared.encode(badge(size: 320), as: .png, options: options), "image/png"),
            "banner.webp": (
                try WebPCoder.shared.encode(landscape(width: 1200, height: 300), as: .webp, options: options),
                "image/webp"
            ),
            "spinner.gif": (
                try GIFCoder.shared.encode(spinner(width: 300, height: 200, frames: 4), as: .gif, options: options),
                "image/gif"
            ),
        ]
    }

    /// An animation: a dot circling on a coloured background, one frame per step, 0.1 s each.
    static func spinner(width: Int, height: Int, frames count: Int) -> Image {
        let frames = (0..<count).map { step in
            var bytes = [UInt8](repeating: 0, count: width * height * 3)
            let angle = Double(step) / Double(count) * 2 * Double.pi
            let cx = Double(width) / 2 + cos(angle) * Double(height) / 3
            let cy = Double(height) / 2 + sin(angle) * Double(height) / 3
            let radius = Double(height) / 10
            for y in 0..<height {
                for x in 0..<width {
                    let i = (y * width + x) * 3
                    let inside =
                        (Double(x) - cx) * (Double(x) - cx) + (Double(y) - cy) * (Double(y) - cy) < radius * radius
                    (bytes[i], bytes[i + 1], bytes[i + 2]) = inside ? (250, 250, 250) : (30, 60, UInt8(100 + step * 30))
                }
            }
            return ImageFrame(
                pixels: PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes), duration: 0.1)
        }
        return Image(frames: frames)
    }

    /// Sky, sun and hills, RGB.
    static func landscape(width: Int, height: Int) -> Image {
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                let hill = Double(height) * (0.65 + 0.1 * sin(Double(x) / Double(width) * 6.3))
                let dx = Double(x - width * 3 / 4)
                let dy = Double(y - height / 4)
                let pixel: (Int, Int, Int)
                if dx * dx + dy * dy < Double(height * height) / 64 {
                    pixel = (255, 214, 90)  // sun
                } else if Double(y) > hill {
                    pixel = (40 + y * 60 / height, 120 + x * 40 / width, 50)  // grass
                } else {
                    pixel = (90 + y * 80 / height, 150 + y * 60 / height, 235)  // sky
                }
                (bytes[i], bytes[i + 1], bytes[i + 2]) = (UInt8(pixel.0), UInt8(pixel.1), UInt8(pixel.2))
            }
        }
        return Image(pixels: PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes))
    }

    /// A ring on a transparent background, RGBA with straight alpha.
    static func badge(size: Int) -> Image {
        var bytes = [UInt8](repeating: 0, count: size * size * 4)
        let center = Double(size) / 2
        for y in 0..<size {
            for x in 0..<size {
                let distance =
                    ((Double(x) - center) * (Double(x) - center) + (Double(y) - center) * (Double(y) - center))
                    .squareRoot()
                guard distance < center * 0.95, distance > center * 0.55 else { continue }
                let i = (y * size + x) * 4
                (bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]) = (220, UInt8(x * 200 / size), 60, 255)
            }
        }
        return Image(pixels: PixelBuffer(width: size, height: size, layout: .rgba8, bytes: bytes))
    }
}
