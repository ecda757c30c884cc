import CBaselines
import Foundation
import ImageCore

/// Packed 8-bit pixels (RGB or RGBA) used to build inputs; converts to an SDK ``ImageCore/Image``.
public struct Pixels: Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    /// Row-major packed samples, `width * height * channels` bytes.
    public let bytes: [UInt8]

    /// Wraps packed samples.
    public init(width: Int, height: Int, channels: Int, bytes: [UInt8]) {
        precondition(bytes.count == width * height * channels)
        self.width = width
        self.height = height
        self.channels = channels
        self.bytes = bytes
    }

    /// Decodes a JPEG at full size with TurboJPEG into RGB (3) or RGBA (4).
    public static func decodeJPEG(_ data: Data, channels: Int) -> Pixels {
        var width: Int32 = 0
        var height: Int32 = 0
        let status = data.withUnsafeBytes { raw in
            cb_jpeg_size(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, &width, &height)
        }
        precondition(status == 0, "cannot read the JPEG header of a benchmark input")
        var bytes = [UInt8](repeating: 0, count: Int(width) * Int(height) * channels)
        let decoded = data.withUnsafeBytes { raw in
            bytes.withUnsafeMutableBufferPointer { out in
                cb_jpeg_decode_into(
                    raw.bindMemory(to: UInt8.self).baseAddress, raw.count, Int32(channels), out.baseAddress, width,
                    height)
            }
        }
        precondition(decoded == 0, "cannot decode a benchmark input JPEG")
        return Pixels(width: Int(width), height: Int(height), channels: channels, bytes: bytes)
    }

    /// The centred `width x height` crop (clamped to the image).
    public func centerCrop(width cropWidth: Int, height cropHeight: Int) -> Pixels {
        crop(x: (width - cropWidth) / 2, y: (height - cropHeight) / 2, width: cropWidth, height: cropHeight)
    }

    /// The crop at `x, y` (clamped so it lies inside the image).
    public func crop(x: Int, y: Int, width cropWidth: Int, height cropHeight: Int) -> Pixels {
        let w = min(cropWidth, width)
        let h = min(cropHeight, height)
        let x0 = max(0, min(x, width - w))
        let y0 = max(0, min(y, height - h))
        var out = [UInt8]()
        out.reserveCapacity(w * h * channels)
        for row in y0..<(y0 + h) {
            let start = (row * width + x0) * channels
            out.append(contentsOf: bytes[start..<(start + w * channels)])
        }
        return Pixels(width: w, height: h, channels: channels, bytes: out)
    }

    /// Half the size in each direction, each pixel the average of a 2x2 block (odd edges dropped).
    public func halved() -> Pixels {
        let w = width / 2
        let h = height / 2
        var out = [UInt8](repeating: 0, count: w * h * channels)
        for y in 0..<h {
            for x in 0..<w {
                for c in 0..<channels {
                    let a = (2 * y * width + 2 * x) * channels + c
                    let b = a + width * channels
                    let sum = Int(bytes[a]) + Int(bytes[a + channels]) + Int(bytes[b]) + Int(bytes[b + channels])
                    out[(y * w + x) * channels + c] = UInt8((sum + 2) / 4)
                }
            }
        }
        return Pixels(width: w, height: h, channels: channels, bytes: out)
    }

    /// RGB → RGBA with opaque alpha (RGBA input is returned as is).
    public func rgba() -> Pixels {
        guard channels == 3 else { return self }
        var out = [UInt8](repeating: 255, count: width * height * 4)
        for i in 0..<(width * height) {
            out[i * 4] = bytes[i * 3]
            out[i * 4 + 1] = bytes[i * 3 + 1]
            out[i * 4 + 2] = bytes[i * 3 + 2]
        }
        return Pixels(width: width, height: height, channels: 4, bytes: out)
    }

    /// The SDK image over these pixels (straight alpha for RGBA).
    public var image: Image {
        let layout: PixelLayout = channels == 4 ? .rgba8 : .rgb8
        return Image(pixels: PixelBuffer(width: width, height: height, layout: layout, bytes: bytes))
    }

    /// Megapixels, for labels.
    public var megapixels: Double { Double(width * height) / 1_000_000 }
}
