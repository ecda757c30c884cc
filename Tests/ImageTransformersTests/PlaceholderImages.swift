import ImageCore

/// The small test images of scripts/placeholder-fixtures.py, from the same integer formulas (keep the two in step):
/// the fixtures were computed from these exact bytes by the reference implementations.
enum PlaceholderImages {
    static let names = ["gradient", "checker", "rings", "noise", "solid", "fade", "holes"]

    /// The named image as straight RGBA.
    static func buffer(_ name: String) -> PixelBuffer {
        switch name {
        case "gradient":
            return rgba(32, 24) { x, y in [x * 255 / 31, y * 255 / 23, (x + y) * 4 % 256, 255] }
        case "checker":
            return rgba(20, 30) { x, y in (x / 5 + y / 5) % 2 == 1 ? [200, 40, 90, 255] : [30, 160, 220, 255] }
        case "rings":
            return rgba(64, 40) { x, y in
                let r = ((x - 32) * (x - 32) + (y - 20) * (y - 20)) * 3 % 256
                return [r, 255 - r, x * 4 % 256, 255]
            }
        case "noise":
            var state: UInt32 = 0x9E37_79B9
            return rgba(48, 48) { _, _ in
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                return [Int(state & 255), Int(state >> 8 & 255), Int(state >> 16 & 255), 255]
            }
        case "solid":
            return rgba(16, 16) { _, _ in [120, 60, 200, 255] }
        case "fade":
            return rgba(40, 24) { x, y in [x * 255 / 39, 128, y * 255 / 23, min(255, x * 7 + y * 3)] }
        case "holes":
            return rgba(24, 64) { x, y in [x * 10 % 256, y * 4 % 256, 90, (x + y) % 3 == 0 ? 0 : 255] }
        default:
            preconditionFailure("no test image \(name)")
        }
    }

    /// Pixels in row order, top row first (the order the formulas' state advances in).
    private static func rgba(_ width: Int, _ height: Int, _ pixel: (Int, Int) -> [Int]) -> PixelBuffer {
        var bytes: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { bytes += pixel(x, y).map { UInt8($0) } }
        }
        return PixelBuffer(width: width, height: height, layout: .rgba8, alphaMode: .straight, bytes: bytes)
    }
}
