/// Writes GIF files byte by byte so tests can state exactly what a file contains: frame rectangles (also
/// outside the screen), disposal methods, transparency, interlacing, local palettes, loop counts, truncation.
///
/// Pixel data uses "uncompressed" LZW (8-bit literals with a clear code before the table would widen codes),
/// which every decoder must accept.
struct GIFBuilder {
    struct Frame {
        var left = 0
        var top = 0
        var width: Int
        var height: Int
        /// Palette indices, row-major in display order (the builder interlaces them when asked).
        var indices: [UInt8]
        var disposal = 0
        var transparentIndex: Int? = nil
        var delayCentiseconds = 10
        var localPalette: [(UInt8, UInt8, UInt8)]? = nil
        var interlaced = false
        var writeControl = true
    }

    var width: Int
    var height: Int
    var globalPalette: [(UInt8, UInt8, UInt8)]? = [(0, 0, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255)]
    var loopCount: Int? = 0
    var frames: [Frame] = []
    var version = "GIF89a"

    func build() -> [UInt8] {
        var out = Array(version.utf8)
        out += le16(width) + le16(height)
        if let globalPalette {
            out += [0x80 | 0x70 | UInt8(tableBits(globalPalette.count) - 1), 0, 0]
            out += table(globalPalette)
        } else {
            out += [0x70, 0, 0]
        }
        if let loopCount {
            out += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1] + le16(loopCount) + [0]
        }
        for frame in frames {
            if frame.writeControl {
                let packed = UInt8(frame.disposal << 2) | (frame.transparentIndex != nil ? 1 : 0)
                out += [0x21, 0xF9, 4, packed] + le16(frame.delayCentiseconds)
                out += [UInt8(frame.transparentIndex ?? 0), 0]
            }
            out += [0x2C] + le16(frame.left) + le16(frame.top) + le16(frame.width) + le16(frame.height)
            var packed: UInt8 = frame.interlaced ? 0x40 : 0
            if let local = frame.localPalette { packed |= 0x80 | UInt8(tableBits(local.count) - 1) }
            out.append(packed)
            if let local = frame.localPalette { out += table(local) }
            let ordered =
                frame.interlaced ? interlace(frame.indices, width: frame.width, height: frame.height) : frame.indices
            out += [8] + subBlocks(lzw(ordered)) + [0]
        }
        out.append(0x3B)
        return out
    }

    private func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)] }

    private func tableBits(_ count: Int) -> Int {
        var bits = 1
        while 1 << bits < count { bits += 1 }
        return bits
    }

    private func table(_ colors: [(UInt8, UInt8, UInt8)]) -> [UInt8] {
        var out: [UInt8] = []
        for i in 0..<(1 << tableBits(colors.count)) {
            let c = i < colors.count ? colors[i] : (0, 0, 0)
            out += [c.0, c.1, c.2]
        }
        return out
    }

    private func interlace(_ rows: [UInt8], width: Int, height: Int) -> [UInt8] {
        var out: [UInt8] = []
        for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
            for y in stride(from: start, to: height, by: step) { out += rows[y * width..<(y + 1) * width] }
        }
        return out
    }

    /// 9-bit codes: clear, up to 250 literals, clear, ..., end of information.
    private func lzw(_ indices: [UInt8]) -> [UInt8] {
        var codes: [Int] = []
        for (i, index) in indices.enumerated() {
            if i % 250 == 0 { codes.append(256) }
            codes.append(Int(index))
        }
        codes.append(257)
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for code in codes {
            buffer |= code << bits
            bits += 9
            while bits >= 8 {
                out.append(UInt8(buffer & 0xFF))
                buffer >>= 8
                bits -= 8
            }
        }
        if bits > 0 { out.append(UInt8(buffer & 0xFF)) }
        return out
    }

    private func subBlocks(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        while offset < data.count {
            let n = min(255, data.count - offset)
            out.append(UInt8(n))
            out += data[offset..<offset + n]
            offset += n
        }
        return out
    }
}
