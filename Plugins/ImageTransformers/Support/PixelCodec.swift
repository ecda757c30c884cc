import ImageCore

/// Converts one pixel of a ``PixelLayout`` to and from premultiplied floats on the 0–255 scale.
///
/// Every filtering transformer works on `SIMD4<Float>` lanes `(r, g, b, a)` with colour premultiplied by alpha:
/// gray pixels load as `(g, g, g, a)`, opaque layouts load with `a = 255`. The generic loops that take a codec
/// type are specialised per layout by the optimiser, so the per-pixel switch on the layout disappears from hot
/// loops. Stateless; safe from any thread.
protocol PixelCodec: SendableMetatype {
    /// Bytes per pixel of the layout.
    static var bytesPerPixel: Int { get }
    /// Loads the pixel at `p` as premultiplied floats.
    static func load(_ p: UnsafePointer<UInt8>) -> SIMD4<Float>
    /// Stores premultiplied floats at `p`, rounding and clamping (and un-premultiplying for straight alpha).
    static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<UInt8>)
}

/// Clamps to 0...255 and rounds to nearest; NaN becomes 0 (never traps).
@inline(__always)
func clampToByte(_ x: Float) -> UInt8 {
    let c: Float = x > 0 ? (x < 255 ? x : 255) : 0
    return UInt8(c + 0.5)
}

/// Un-premultiplies `(r, g, b, a)`; colour is 0 where alpha rounds to 0.
@inline(__always)
func unpremultiply(_ v: SIMD4<Float>) -> SIMD4<Float> {
    let a = v[3]
    guard a >= 0.5 else { return SIMD4(0, 0, 0, 0) }
    let scale = 255 / a
    return SIMD4(v[0] * scale, v[1] * scale, v[2] * scale, a)
}

/// RGBA8 with straight alpha.
enum RGBAStraightCodec: PixelCodec {
    static var bytesPerPixel: Int { 4 }
    @inline(__always) static func load(_ p: UnsafePointer<UInt8>) -> SIMD4<Float> {
        let a = Float(p[3])
        let s = a * (1 / 255 as Float)
        return SIMD4(Float(p[0]) * s, Float(p[1]) * s, Float(p[2]) * s, a)
    }
    @inline(__always) static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<UInt8>) {
        let u = unpremultiply(v)
        p[0] = clampToByte(u[0])
        p[1] = clampToByte(u[1])
        p[2] = clampToByte(u[2])
        p[3] = clampToByte(u[3])
    }
}

/// RGBA8 already premultiplied.
enum RGBAPremultipliedCodec: PixelCodec {
    static var bytesPerPixel: Int { 4 }
    @inline(__always) static func load(_ p: UnsafePointer<UInt8>) -> SIMD4<Float> {
        SIMD4(Float(p[0]), Float(p[1]), Float(p[2]), Float(p[3]))
    }
    @inline(__always) static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<UInt8>) {
        let a = clampToByte(v[3])
        let limit = Float(a)
        p[0] = clampToByte(min(v[0], limit))
        p[1] = clampToByte(min(v[1], limit))
        p[2] = clampToByte(min(v[2], limit))
        p[3] = a
    }
}

/// RGB8, opaque.
enum RGBCodec: PixelCodec {
    static var bytesPerPixel: Int { 3 }
    @inline(__always) static func load(_ p: UnsafePointer<UInt8>) -> SIMD4<Float> {
        SIMD4(Float(p[0]), Float(p[1]), Float(p[2]), 255)
    }
    @inline(__always) static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<UInt8>) {
        p[0] = clampToByte(v[0])
        p[1] = clampToByte(v[1])
        p[2] = clampToByte(v[2])
    }
}

/// Gray8, opaque; stores lane 0.
enum GrayCodec: PixelCodec {
    static var bytesPerPixel: Int { 1 }
    @inline(__always) static func load(_ p: UnsafePointer<UInt8>) -> SIMD4<Float> {
        let g = Float(p[0])
        return SIMD4(g, g, g, 255)
    }
    @inline(__always) static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<UInt8>) {
        p[0] = clampToByte(v[0])
    }
}

/// Gray + alpha with straight alpha.
enum GrayAlphaStraightCodec: PixelCodec {
    static var bytesPerPixel: Int { 2 }
    @inline(__always) static func load(_ p: UnsafePointer<UInt8>) -> SIMD4<Float> {
        let a = Float(p[1])
        let g = Float(p[0]) * a * (1 / 255 as Float)
        return SIMD4(g, g, g, a)
    }
    @inline(__always) static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<UInt8>) {
        let u = unpremultiply(v)
        p[0] = clampToByte(u[0])
        p[1] = clampToByte(u[3])
    }
}

/// Gray + alpha, premultiplied.
enum GrayAlphaPremultipliedCodec: PixelCodec {
    static var bytesPerPixel: Int { 2 }
    @inline(__always) static func load(_ p: UnsafePointer<UInt8>) -> SIMD4<Float> {
        let g = Float(p[0])
        return SIMD4(g, g, g, Float(p[1]))
    }
    @inline(__always) static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<UInt8>) {
        let a = clampToByte(v[3])
        p[0] = clampToByte(min(v[0], Float(a)))
        p[1] = a
    }
}

/// Row converters between a layout and premultiplied `SIMD4<Float>` pixels, chosen once per operation.
///
/// The per-row call goes through a closure; the per-pixel loop inside is specialised for one codec.
struct RowCodec: Sendable {
    /// Bytes per pixel of the layout.
    let bytesPerPixel: Int
    /// Loads `count` pixels from bytes into premultiplied floats.
    let load: @Sendable (UnsafePointer<UInt8>, Int, UnsafeMutablePointer<SIMD4<Float>>) -> Void
    /// Stores `count` premultiplied floats into bytes.
    let store: @Sendable (UnsafePointer<SIMD4<Float>>, Int, UnsafeMutablePointer<UInt8>) -> Void

    /// The converters for a layout and alpha mode.
    init(layout: PixelLayout, alphaMode: AlphaMode) {
        switch (layout, alphaMode) {
        case (.rgba8, .premultiplied): self.init(RGBAPremultipliedCodec.self)
        case (.rgba8, _): self.init(RGBAStraightCodec.self)
        case (.rgb8, _): self.init(RGBCodec.self)
        case (.gray8, _): self.init(GrayCodec.self)
        case (.grayAlpha8, .premultiplied): self.init(GrayAlphaPremultipliedCodec.self)
        case (.grayAlpha8, _): self.init(GrayAlphaStraightCodec.self)
        }
    }

    /// The converters of a buffer's layout.
    init(_ buffer: PixelBuffer) { self.init(layout: buffer.layout, alphaMode: buffer.alphaMode) }

    private init<C: PixelCodec>(_ codec: C.Type) {
        bytesPerPixel = C.bytesPerPixel
        load = { src, count, dst in
            var p = src
            for x in 0..<count {
                dst[x] = C.load(p)
                p += C.bytesPerPixel
            }
        }
        store = { src, count, dst in
            var p = dst
            for x in 0..<count {
                C.store(src[x], p)
                p += C.bytesPerPixel
            }
        }
    }
}
