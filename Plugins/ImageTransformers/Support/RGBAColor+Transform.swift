import ImageCore

extension RGBAColor {
    /// True when red, green and blue are equal, so the colour can be applied to a gray image without turning it
    /// into RGB.
    var isGray: Bool { red == green && green == blue }

    /// `#RRGGBBAA` in upper-case hex; the form transformer keys embed.
    var keyDescription: String {
        let digits = Array("0123456789ABCDEF")
        var text = "#"
        for channel in [red, green, blue, alpha] {
            text.append(digits[Int(channel >> 4)])
            text.append(digits[Int(channel & 0x0F)])
        }
        return text
    }

    /// The colour premultiplied by its alpha, as floats on the 0–255 scale (lane 3 is alpha).
    var premultiplied: SIMD4<Float> {
        let a = Float(alpha)
        let scale = a / 255
        return SIMD4(Float(red) * scale, Float(green) * scale, Float(blue) * scale, a)
    }
}
