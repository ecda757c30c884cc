import Foundation
import ImageCore

/// BlurHash (blurha.sh): a short string of a few cosine components that a page shows, blurred, while the image
/// loads.
///
/// The arithmetic follows the reference implementation (Wolt's, and the PyPI `blurhash` package that ports it)
/// operation for operation, so the same pixels give the same string; the tests compare with that package's output.
/// Colour is read as sRGB and averaged in linear light; alpha is ignored, as the reference does (transparent pixels
/// count with their stored colour).
///
/// Thread-safe: pure functions.
public enum BlurHash {
    /// The side of the box an image is reduced into before hashing (an area average): 32 pixels carry everything
    /// 9 × 9 components can hold, and hashing them costs microseconds.
    public static let defaultMaxSide = 32

    /// The BlurHash of `image`'s first frame, reduced to fit `maxSide × maxSide` first (ImageCore's area average).
    ///
    /// - Parameters:
    ///   - image: the image; only its first frame is read.
    ///   - componentsX: horizontal components, 1...9 (4 is the reference's usual choice).
    ///   - componentsY: vertical components, 1...9 (3 for landscape images).
    ///   - maxSide: the box the frame is reduced into before hashing (``defaultMaxSide``).
    /// - Throws: ``/ImageCore/ImageError`` `transformFailed` (stage `transform`) for components outside 1...9 or an
    ///   empty image.
    public static func encode(
        _ image: Image, componentsX: Int = 4, componentsY: Int = 3, maxSide: Int = defaultMaxSide
    ) throws(ImageError) -> String {
        try encode(PlaceholderPixels(image, maxSide: maxSide), componentsX: componentsX, componentsY: componentsY)
    }

    /// The BlurHash of `pixels` at their own size (no reduction: the cost grows with the pixel count).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `transformFailed` for components outside 1...9 or an empty buffer.
    public static func encode(_ pixels: PixelBuffer, componentsX: Int = 4, componentsY: Int = 3) throws(ImageError)
        -> String
    {
        guard pixels.width > 0, pixels.height > 0 else {
            throw ImageError(.transformFailed, stage: .transform, message: "BlurHash of an empty image")
        }
        return try encode(PlaceholderPixels(pixels), componentsX: componentsX, componentsY: componentsY)
    }

    static func encode(_ pixels: PlaceholderPixels, componentsX: Int, componentsY: Int) throws(ImageError) -> String {
        guard (1...9).contains(componentsX), (1...9).contains(componentsY) else {
            throw ImageError(
                .transformFailed, stage: .transform,
                message: "BlurHash components \(componentsX)x\(componentsY) (each 1...9)")
        }
        let width = Double(pixels.width)
        let height = Double(pixels.height)
        let linear = pixels.rgba.map { sRGBToLinear[Int($0)] }
        // The reference's basis, cos(π·i·x / width), evaluated in the same order so every sum is bit-identical.
        let cosX = (0..<componentsX).map { i in
            (0..<pixels.width).map { x in cos(Double.pi * Double(i) * Double(x) / width) }
        }
        let cosY = (0..<componentsY).map { j in
            (0..<pixels.height).map { y in cos(Double.pi * Double(j) * Double(y) / height) }
        }
        var components: [SIMD3<Double>] = []
        var maxAC = 0.0
        for j in 0..<componentsY {
            for i in 0..<componentsX {
                let norm = i == 0 && j == 0 ? 1.0 : 2.0
                var r = 0.0
                var g = 0.0
                var b = 0.0
                linear.withUnsafeBufferPointer { samples in
                    for y in 0..<pixels.height {
                        let cy = cosY[j][y]
                        var offset = y * pixels.width * 4
                        for x in 0..<pixels.width {
                            let basis = norm * cosX[i][x] * cy
                            r += basis * samples[offset]
                            g += basis * samples[offset + 1]
                            b += basis * samples[offset + 2]
                            offset += 4
                        }
                    }
                }
                let component = SIMD3(r / (width * height), g / (width * height), b / (width * height))
                components.append(component)
                if i != 0 || j != 0 { maxAC = max(maxAC, abs(component.x), abs(component.y), abs(component.z)) }
            }
        }
        let dc = components[0]
        let dcValue = linearToSRGB(dc.x) << 16 + linearToSRGB(dc.y) << 8 + linearToSRGB(dc.z)
        let quantisedMax = Int(max(0, min(82, (maxAC * 166 - 0.5).rounded(.down))))
        let normFactor = Double(quantisedMax + 1) / 166
        var hash = base83(componentsX - 1 + (componentsY - 1) * 9, length: 1)
        hash += base83(quantisedMax, length: 1)
        hash += base83(dcValue, length: 4)
        func quantised(_ value: Double) -> Int {
            Int(max(0, min(18, (signPow(value / normFactor, 0.5) * 9 + 9.5).rounded(.down))))
        }
        for component in components.dropFirst() {
            hash += base83(
                quantised(component.x) * 19 * 19 + quantised(component.y) * 19 + quantised(component.z), length: 2)
        }
        return hash
    }

    /// Decodes `hash` to `width × height` opaque RGB pixels (decode small — 32 pixels or less — and let the page scale
    /// it up: it is a blur). `punch` scales the contrast (1 as encoded).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` (stage `decode`) for a malformed hash or a size outside
    ///   1...1024.
    public static func decode(_ hash: String, width: Int, height: Int, punch: Double = 1) throws(ImageError)
        -> PixelBuffer
    {
        func bad(_ why: String) -> ImageError {
            ImageError(.badImageData, stage: .decode, message: "BlurHash: \(why)")
        }
        guard (1...1024).contains(width), (1...1024).contains(height) else { throw bad("size \(width)x\(height)") }
        let characters = Array(hash.utf8)
        guard characters.count >= 6 else { throw bad("shorter than 6 characters") }
        let digits = characters.map { base83Values[Int($0)] }
        guard !digits.contains(-1) else { throw bad("a character outside base 83") }
        func value(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 83 + Int(digits[$1]) } }
        let sizeInfo = value(0..<1)
        let componentsX = sizeInfo % 9 + 1
        let componentsY = sizeInfo / 9 + 1
        guard characters.count == 4 + 2 * componentsX * componentsY else { throw bad("length for the components") }
        let maxValue = Double(value(1..<2) + 1) / 166 * punch
        let dc = value(2..<6)
        var colours: [SIMD3<Double>] = [
            SIMD3(sRGBToLinear[dc >> 16], sRGBToLinear[(dc >> 8) & 255], sRGBToLinear[dc & 255])
        ]
        for component in 1..<(componentsX * componentsY) {
            let ac = value((4 + component * 2)..<(6 + component * 2))
            func channel(_ quantised: Int) -> Double { signPow((Double(quantised) - 9) / 9, 2) * maxValue }
            colours.append(SIMD3(channel(ac / (19 * 19)), channel((ac / 19) % 19), channel(ac % 19)))
        }
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                var pixel = SIMD3<Double>(0, 0, 0)
                for j in 0..<componentsY {
                    for i in 0..<componentsX {
                        let basis =
                            cos(Double.pi * Double(x) * Double(i) / Double(width))
                            * cos(Double.pi * Double(y) * Double(j) / Double(height))
                        pixel += colours[i + j * componentsX] * basis
                    }
                }
                let offset = (y * width + x) * 3
                bytes[offset] = UInt8(linearToSRGB(pixel.x))
                bytes[offset + 1] = UInt8(linearToSRGB(pixel.y))
                bytes[offset + 2] = UInt8(linearToSRGB(pixel.z))
            }
        }
        return PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes)
    }

    // MARK: The reference's helpers

    static let alphabet = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)

    /// Each ASCII byte's base-83 digit, -1 for bytes outside the alphabet.
    static let base83Values: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = Int8(index) }
        return table
    }()

    static func base83(_ value: Int, length: Int) -> String {
        var characters: [UInt8] = []
        var divisor = 1
        for _ in 1..<max(1, length) { divisor *= 83 }
        for _ in 0..<length {
            characters.append(alphabet[(value / divisor) % 83])
            divisor /= 83
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// sRGB byte → linear 0...1, as the reference computes it.
    static let sRGBToLinear: [Double] = (0..<256).map { byte in
        let value = Double(byte) / 255
        return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    /// Linear → sRGB 0...255, rounded half up as the reference does.
    static func linearToSRGB(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        return v <= 0.0031308 ? Int(v * 12.92 * 255 + 0.5) : Int((1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    static func signPow(_ value: Double, _ exponent: Double) -> Double {
        Double(signOf: value, magnitudeOf: pow(abs(value), exponent))
    }
}
