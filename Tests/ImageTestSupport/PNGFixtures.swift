import Foundation

/// A tiny pure-Swift PNG writer for tests: any colour type and bit depth, palette, tRNS, Adam7, and hand-crafted
/// headers (e.g. a 60000x60000 IHDR with no data) that a real encoder would refuse to produce.
///
/// The image data is stored uncompressed (deflate "stored" blocks), so the files are independent of libpng and
/// zlib. Samples are given unpacked (one `UInt16` per sample, row-major, `channels` per pixel) and packed here.
public enum PNGFixtures {
    /// PNG colour types.
    public enum ColorType: UInt8, Sendable, CaseIterable {
        case gray = 0, rgb = 2, palette = 3, grayAlpha = 4, rgba = 6

        /// Samples per pixel.
        public var channels: Int {
            switch self {
            case .gray, .palette: 1
            case .grayAlpha: 2
            case .rgb: 3
            case .rgba: 4
            }
        }
    }

    /// Builds a PNG. `samples` holds `width * height * colorType.channels` values below `1 << bitDepth`.
    public static func make(
        width: Int, height: Int, bitDepth: Int, colorType: ColorType, samples: [UInt16], palette: [UInt8]? = nil,
        transparency: [UInt8]? = nil, interlaced: Bool = false
    ) -> Data {
        var out = Data(signature)
        out += chunk(
            "IHDR",
            ihdr(
                width: width, height: height, bitDepth: bitDepth, colorType: colorType.rawValue,
                interlaced: interlaced))
        if let palette { out += chunk("PLTE", palette) }
        if let transparency { out += chunk("tRNS", transparency) }
        var raw: [UInt8] = []
        let passes: [(x0: Int, y0: Int, dx: Int, dy: Int)] =
            interlaced
            ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
            : [(0, 0, 1, 1)]
        let channels = colorType.channels
        for pass in passes {
            let xs = Array(stride(from: pass.x0, to: width, by: pass.dx))
            let ys = Array(stride(from: pass.y0, to: height, by: pass.dy))
            guard !xs.isEmpty, !ys.isEmpty else { continue }
            for y in ys {
                raw.append(0)  // filter type None
                var row: [UInt16] = []
                for x in xs {
                    let start = (y * width + x) * channels
                    row += samples[start..<start + channels]
                }
                raw += pack(row, bitDepth: bitDepth)
            }
        }
        out += chunk("IDAT", zlibStored(raw))
        out += chunk("IEND", [])
        return out
    }

    /// A PNG whose IHDR declares `width × height` (8-bit RGBA) followed directly by IEND: a bomb header.
    public static func headerOnly(width: UInt32, height: UInt32) -> Data {
        var out = Data(signature)
        out += chunk("IHDR", ihdr(width: Int(width), height: Int(height), bitDepth: 8, colorType: 6, interlaced: false))
        out += chunk("IEND", [])
        return out
    }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    static func ihdr(width: Int, height: Int, bitDepth: Int, colorType: UInt8, interlaced: Bool) -> [UInt8] {
        be32(UInt32(truncatingIfNeeded: width)) + be32(UInt32(truncatingIfNeeded: height))
            + [UInt8(bitDepth), colorType, 0, 0, interlaced ? 1 : 0]
    }

    static func pack(_ values: [UInt16], bitDepth: Int) -> [UInt8] {
        switch bitDepth {
        case 16: return values.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        case 8: return values.map { UInt8($0) }
        default:
            var bytes: [UInt8] = []
            var current = 0
            var used = 0
            for value in values {
                current = current << bitDepth | Int(value)
                used += bitDepth
                if used == 8 {
                    bytes.append(UInt8(current))
                    current = 0
                    used = 0
                }
            }
            if used > 0 { bytes.append(UInt8(current << (8 - used))) }
            return bytes
        }
    }

    static func chunk(_ type: String, _ payload: [UInt8]) -> Data {
        let typeBytes = Array(type.utf8)
        return Data(be32(UInt32(payload.count)) + typeBytes + payload + be32(crc32(typeBytes + payload)))
    }

    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, data.count - offset)
            let final: UInt8 = offset + count == data.count ? 1 : 0
            out += [final, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            out += data[offset..<offset + count]
            offset += count
        } while offset < data.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + be32(b << 16 | a)
    }

    static let crcTable: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes { c = crcTable[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
