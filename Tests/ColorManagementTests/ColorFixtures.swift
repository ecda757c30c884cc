import ColorManagement
import Foundation
import ImageCore

/// The committed fixtures of `Fixtures/` (made by `Fixtures/make_fixtures.py`, which says how) and the ΔE
/// arithmetic the tests judge conversions by.
enum ColorFixtures {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func data(_ name: String) throws -> Data { try Data(contentsOf: folder.appendingPathComponent(name)) }
    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try data(name)) }

    /// A registry with every coder under test; conversion is registered process-wide once.
    static let registered: Void = ColorConversion.register(LCMSColorConverter.shared)

    static func options(convert: Bool) -> ImageDecodeOptions {
        _ = registered
        return ImageDecodeOptions(convertToSRGB: convert)
    }

    /// CIE 1976 ΔE between two 8-bit sRGB colours, in CIELAB (D65 white).
    static func deltaE76(_ a: (UInt8, UInt8, UInt8), _ b: (UInt8, UInt8, UInt8)) -> Double {
        let la = lab(a)
        let lb = lab(b)
        return ((la.0 - lb.0) * (la.0 - lb.0) + (la.1 - lb.1) * (la.1 - lb.1) + (la.2 - lb.2) * (la.2 - lb.2))
            .squareRoot()
    }

    static func lab(_ rgb: (UInt8, UInt8, UInt8)) -> (Double, Double, Double) {
        func linear(_ v: UInt8) -> Double {
            let c = Double(v) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        let (r, g, b) = (linear(rgb.0), linear(rgb.1), linear(rgb.2))
        let x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
        let y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
        let z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883
        func f(_ t: Double) -> Double { t > 216 / 24389 ? cbrt(t) : (24389 / 27 * t + 16) / 116 }
        return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))
    }

    /// Mean and maximum ΔE76 between RGB(A) pixels and tightly packed 8-bit RGB reference bytes.
    static func deltaE(_ pixels: PixelBuffer, reference: [UInt8]) -> (mean: Double, max: Double) {
        precondition(reference.count == pixels.width * pixels.height * 3)
        let rgba = pixels.straightRGBABytes()
        var total = 0.0
        var worst = 0.0
        for i in 0..<pixels.width * pixels.height {
            let e = deltaE76(
                (rgba[i * 4], rgba[i * 4 + 1], rgba[i * 4 + 2]),
                (reference[i * 3], reference[i * 3 + 1], reference[i * 3 + 2]))
            total += e
            worst = max(worst, e)
        }
        return (total / Double(pixels.width * pixels.height), worst)
    }
}
