import Foundation
import ImageCore

/// ThumbHash (evanw.github.io/thumbhash): about 25 bytes that hold a blurred placeholder with its colours, aspect
/// ratio and alpha — finer than a BlurHash at the same size.
///
/// The arithmetic follows Evan Wallace's reference implementation operation for operation (rounding half up, as its
/// `Math.round` does), so the same pixels give the same bytes; the tests compare with the PyPI `thumbhash` package's
/// output. The reference encodes at most 100 × 100 pixels: ``encode(_:maxSide:)`` reduces the image first (ImageCore's
/// area average), which is also what keeps it cheap.
///
/// Thread-safe: pure functions.
public enum ThumbHash {
    /// The largest side the format encodes.
    public static let maxSide = 100

    /// The ThumbHash of `image`'s first frame, reduced to fit `maxSide × maxSide` (at most 100) first.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `transformFailed` (stage `transform`) for an empty image.
    public static func encode(_ image: Image, maxSide: Int = maxSide) throws(ImageError) -> [UInt8] {
        encode(try PlaceholderPixels(image, maxSide: min(maxSide, Self.maxSide)))
    }

    /// The ThumbHash of `pixels` at their own size.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `transformFailed` for an empty buffer or a side over 100.
    public static func encode(_ pixels: PixelBuffer) throws(ImageError) -> [UInt8] {
        guard (1...maxSide).contains(pixels.width), (1...maxSide).contains(pixels.height) else {
            throw ImageError(
                .transformFailed, stage: .transform,
                message: "ThumbHash of \(pixels.width)x\(pixels.height) (sides 1...\(maxSide))")
        }
        return encode(PlaceholderPixels(pixels))
    }

    /// Rounds half up, as JavaScript's `Math.round` (the reference's) does for the non-negative values hashed here.
    @inline(__always)
    static func round(_ value: Double) -> Int { Int((value + 0.5).rounded(.down)) }

    static func encode(_ pixels: PlaceholderPixels) -> [UInt8] {
        let (w, h) = (pixels.width, pixels.height)
        let count = w * h
        let rgba = pixels.rgba
        var average = SIMD4<Double>(0, 0, 0, 0)
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            average.x += alpha / 255 * Double(rgba[i * 4])
            average.y += alpha / 255 * Double(rgba[i * 4 + 1])
            average.z += alpha / 255 * Double(rgba[i * 4 + 2])
            average.w += alpha
        }
        if average.w != 0 {
            average.x /= average.w
            average.y /= average.w
            average.z /= average.w
        }
        let hasAlpha = average.w < Double(count)
        let lLimit = hasAlpha ? 5.0 : 7.0
        let lx = max(1, round(lLimit * Double(w) / Double(max(w, h))))
        let ly = max(1, round(lLimit * Double(h) / Double(max(w, h))))
        var l = [Double](repeating: 0, count: count)
        var p = l
        var q = l
        var a = l
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = average.x * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = average.y * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = average.z * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }
        let lChannel = encodeChannel(l, w: w, h: h, nx: max(3, lx), ny: max(3, ly))
        let pChannel = encodeChannel(p, w: w, h: h, nx: 3, ny: 3)
        let qChannel = encodeChannel(q, w: w, h: h, nx: 3, ny: 3)
        let aChannel = hasAlpha ? encodeChannel(a, w: w, h: h, nx: 5, ny: 5) : (dc: 1, ac: [], scale: 1)
        let isLandscape = w > h
        let header24 =
            round(63 * lChannel.dc) | round(31.5 + 31.5 * pChannel.dc) << 6 | round(31.5 + 31.5 * qChannel.dc) << 12
            | round(31 * lChannel.scale) << 18 | (hasAlpha ? 1 : 0) << 23
        let header16 =
            (isLandscape ? ly : lx) | round(63 * pChannel.scale) << 3 | round(63 * qChannel.scale) << 9
            | (isLandscape ? 1 : 0) << 15
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8(header24 >> 16), UInt8(header16 & 255),
            UInt8(header16 >> 8),
        ]
        if hasAlpha { hash.append(UInt8(round(15 * aChannel.dc) | round(15 * aChannel.scale) << 4)) }
        var isOdd = false
        for ac in hasAlpha
            ? [lChannel.ac, pChannel.ac, qChannel.ac, aChannel.ac] : [lChannel.ac, pChannel.ac, qChannel.ac]
        {
            for f in ac {
                let nibble = UInt8(round(15 * f))
                if isOdd { hash[hash.count - 1] |= nibble << 4 } else { hash.append(nibble) }
                isOdd.toggle()
            }
        }
        return hash
    }

    /// The reference's `encodeChannel`: the DC, the AC coefficients mapped to 0...1, and their scale.
    private static func encodeChannel(
        _ channel: [Double], w: Int, h: Int, nx: Int, ny: Int
    ) -> (dc: Double, ac: [Double], scale: Double) {
        var dc = 0.0
        var ac: [Double] = []
        var scale = 0.0
        var fx = [Double](repeating: 0, count: w)
        channel.withUnsafeBufferPointer { samples in
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    var f = 0.0
                    for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
                    for y in 0..<h {
                        let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                        let row = y * w
                        for x in 0..<w { f += samples[x + row] * fx[x] * fy }
                    }
                    f /= Double(w * h)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
        }
        if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        return (dc, ac, scale)
    }

    // MARK: Decoding

    /// What a ThumbHash holds before it is rendered.
    private struct Header {
        let lDC, pDC, qDC, aDC: Double
        let lScale, pScale, qScale, aScale: Double
        let hasAlpha, isLandscape: Bool
        let lx, ly: Int

        init(_ hash: [UInt8]) throws(ImageError) {
            guard hash.count >= 5 else {
                throw ImageError(.badImageData, stage: .decode, message: "ThumbHash: fewer than 5 bytes")
            }
            let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
            let header16 = Int(hash[3]) | Int(hash[4]) << 8
            lDC = Double(header24 & 63) / 63
            pDC = Double((header24 >> 6) & 63) / 31.5 - 1
            qDC = Double((header24 >> 12) & 63) / 31.5 - 1
            lScale = Double((header24 >> 18) & 31) / 31
            hasAlpha = header24 >> 23 != 0
            pScale = Double((header16 >> 3) & 63) / 63
            qScale = Double((header16 >> 9) & 63) / 63
            isLandscape = header16 >> 15 != 0
            lx = max(3, isLandscape ? (hasAlpha ? 5 : 7) : header16 & 7)
            ly = max(3, isLandscape ? header16 & 7 : (hasAlpha ? 5 : 7))
            guard !hasAlpha || hash.count >= 6 else {
                throw ImageError(.badImageData, stage: .decode, message: "ThumbHash: alpha without its byte")
            }
            aDC = hasAlpha ? Double(hash[5] & 15) / 15 : 1
            aScale = hasAlpha ? Double(hash[5] >> 4) / 15 : 0
        }
    }

    /// The approximate aspect ratio (width ÷ height) a hash records.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` (stage `decode`) for a hash shorter than its header.
    public static func aspectRatio(of hash: [UInt8]) throws(ImageError) -> Double {
        guard hash.count >= 5 else {
            throw ImageError(.badImageData, stage: .decode, message: "ThumbHash: fewer than 5 bytes")
        }
        let hasAlpha = hash[2] & 0x80 != 0
        let isLandscape = hash[4] & 0x80 != 0
        let lx = isLandscape ? (hasAlpha ? 5 : 7) : Int(hash[3] & 7)
        let ly = isLandscape ? Int(hash[3] & 7) : (hasAlpha ? 5 : 7)
        guard lx > 0, ly > 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "ThumbHash: no aspect ratio")
        }
        return Double(lx) / Double(ly)
    }

    /// Renders `hash` as straight RGBA, at most 32 pixels on its longer side, as the reference's `thumbHashToRGBA`
    /// does; a page scales it up.
    ///
    /// - Throws: ``/ImageCore/ImageError`` `badImageData` (stage `decode`) for a hash too short for what its header
    ///   declares.
    public static func decode(_ hash: [UInt8]) throws(ImageError) -> PixelBuffer {
        let header = try Header(hash)
        let acStart = header.hasAlpha ? 6 : 5
        var acIndex = 0
        func decodeChannel(_ nx: Int, _ ny: Int, _ scale: Double) throws(ImageError) -> [Double] {
            var ac: [Double] = []
            for cy in 0..<ny {
                var cx = cy > 0 ? 0 : 1
                while cx * ny < nx * (ny - cy) {
                    let index = acStart + (acIndex >> 1)
                    guard index < hash.count else {
                        throw ImageError(.badImageData, stage: .decode, message: "ThumbHash: too few coefficients")
                    }
                    let nibble = (Int(hash[index]) >> ((acIndex & 1) << 2)) & 15
                    ac.append((Double(nibble) / 7.5 - 1) * scale)
                    acIndex += 1
                    cx += 1
                }
            }
            return ac
        }
        let lAC = try decodeChannel(header.lx, header.ly, header.lScale)
        let pAC = try decodeChannel(3, 3, header.pScale * 1.25)
        let qAC = try decodeChannel(3, 3, header.qScale * 1.25)
        let aAC = header.hasAlpha ? try decodeChannel(5, 5, header.aScale) : []
        let ratio = try aspectRatio(of: hash)
        let w = round(ratio > 1 ? 32 : 32 * ratio)
        let h = round(ratio > 1 ? 32 / ratio : 32)
        var rgba = [UInt8](repeating: 0, count: w * h * 4)
        let nx = max(header.lx, header.hasAlpha ? 5 : 3)
        let ny = max(header.ly, header.hasAlpha ? 5 : 3)
        var fx = [Double](repeating: 0, count: nx)
        var fy = [Double](repeating: 0, count: ny)
        for y in 0..<h {
            for x in 0..<w {
                var (l, p, q, a) = (header.lDC, header.pDC, header.qDC, header.aDC)
                for cx in 0..<nx { fx[cx] = cos(Double.pi / Double(w) * (Double(x) + 0.5) * Double(cx)) }
                for cy in 0..<ny { fy[cy] = cos(Double.pi / Double(h) * (Double(y) + 0.5) * Double(cy)) }
                var j = 0
                for cy in 0..<header.ly {
                    var cx = cy > 0 ? 0 : 1
                    let fy2 = fy[cy] * 2
                    while cx * header.ly < header.lx * (header.ly - cy) {
                        l += lAC[j] * fx[cx] * fy2
                        cx += 1
                        j += 1
                    }
                }
                j = 0
                for cy in 0..<3 {
                    let fy2 = fy[cy] * 2
                    for cx in (cy > 0 ? 0 : 1)..<(3 - cy) {
                        let f = fx[cx] * fy2
                        p += pAC[j] * f
                        q += qAC[j] * f
                        j += 1
                    }
                }
                if header.hasAlpha {
                    j = 0
                    for cy in 0..<5 {
                        let fy2 = fy[cy] * 2
                        for cx in (cy > 0 ? 0 : 1)..<(5 - cy) {
                            a += aAC[j] * fx[cx] * fy2
                            j += 1
                        }
                    }
                }
                let b = l - 2 / 3 * p
                let r = (3 * l - b + q) / 2
                let g = r - q
                let offset = (y * w + x) * 4
                // The reference stores into a Uint8Array, which truncates.
                rgba[offset] = UInt8(max(0, 255 * min(1, r)))
                rgba[offset + 1] = UInt8(max(0, 255 * min(1, g)))
                rgba[offset + 2] = UInt8(max(0, 255 * min(1, b)))
                rgba[offset + 3] = UInt8(max(0, 255 * min(1, a)))
            }
        }
        return PixelBuffer(width: w, height: h, layout: .rgba8, alphaMode: .straight, bytes: rgba)
    }
}

extension Image {
    /// The BlurHash of the first frame (see ``BlurHash/encode(_:componentsX:componentsY:maxSide:)``).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `transformFailed` for components outside 1...9 or an empty image.
    public func blurHash(componentsX: Int = 4, componentsY: Int = 3) throws(ImageError) -> String {
        try BlurHash.encode(self, componentsX: componentsX, componentsY: componentsY)
    }

    /// The ThumbHash of the first frame, base64-encoded as pages carry it (see ``ThumbHash/encode(_:maxSide:)``).
    ///
    /// - Throws: ``/ImageCore/ImageError`` `transformFailed` for an empty image.
    public func thumbHash() throws(ImageError) -> String {
        Data(try ThumbHash.encode(self)).base64EncodedString()
    }
}
