import Foundation
import ImageCore

/// Small synthetic images and byte blobs for the cache tests.
public enum CacheFixtures {
    /// An RGBA image of `width` x `height` filled with `value`; its ``ImageCore/Image/memoryCost`` is
    /// `width * height * 4`.
    public static func image(width: Int = 4, height: Int = 4, value: UInt8 = 0x7f) -> Image {
        Image(
            pixels: PixelBuffer(
                width: width, height: height, layout: .rgba8,
                bytes: [UInt8](repeating: value, count: width * height * 4)))
    }

    /// An image whose memory cost is exactly `cost` bytes (`cost` must be a multiple of 4).
    public static func image(cost: Int, value: UInt8 = 0x7f) -> Image {
        precondition(cost > 0 && cost % 4 == 0, "cost must be a positive multiple of 4")
        return image(width: cost / 4, height: 1, value: value)
    }

    /// `count` deterministic pseudo-random bytes derived from `seed` (so a torn or mixed file is detectable).
    public static func bytes(count: Int, seed: UInt64) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes[index] = UInt8(truncatingIfNeeded: state)
        }
        return Data(bytes)
    }

    /// A fresh empty directory under the system temporary directory.
    public static func temporaryDirectory(_ label: String = "cache") -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("webimage-\(label)-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
