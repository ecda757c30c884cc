/// Assembles WebP containers chunk by chunk so tests control what libwebp's own encoder never writes on
/// request: explicit ANMF blend/dispose flags and offsets, an ICCP chunk, or a header that lies about size.
enum WebPBuilder {
    /// A chunk: four-character code, little-endian size, payload, pad byte to even length.
    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
        var out = Array(fourCC.utf8) + le32(payload.count) + payload
        if payload.count % 2 == 1 { out.append(0) }
        return out
    }

    static func riff(_ chunks: [[UInt8]]) -> [UInt8] {
        let body = Array("WEBP".utf8) + chunks.flatMap { $0 }
        return Array("RIFF".utf8) + le32(body.count) + body
    }

    /// VP8X: flags (0x20 ICC, 0x10 alpha, 0x02 animation) and the canvas size.
    static func vp8x(flags: UInt8, width: Int, height: Int) -> [UInt8] {
        chunk("VP8X", [flags, 0, 0, 0] + le24(width - 1) + le24(height - 1))
    }

    static func anim(loopCount: Int) -> [UInt8] { chunk("ANIM", [0, 0, 0, 0] + le16(loopCount)) }

    /// ANMF: offsets (even), duration in ms, `blend` false means "do not blend", `dispose` to background.
    static func anmf(
        x: Int, y: Int, width: Int, height: Int, durationMs: Int, blend: Bool, dispose: Bool, frameData: [UInt8]
    ) -> [UInt8] {
        let flags: UInt8 = (blend ? 0 : 0x02) | (dispose ? 0x01 : 0)
        let header = le24(x / 2) + le24(y / 2) + le24(width - 1) + le24(height - 1) + le24(durationMs) + [flags]
        return chunk("ANMF", header + frameData)
    }

    /// The image chunks (ALPH, VP8 or VP8L, with their headers) of a simple-format WebP file.
    static func imageChunks(of file: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 12
        while offset + 8 <= file.count {
            let fourCC = String(decoding: file[offset..<offset + 4], as: UTF8.self)
            let size =
                Int(file[offset + 4]) | Int(file[offset + 5]) << 8 | Int(file[offset + 6]) << 16
                | Int(file[offset + 7]) << 24
            let end = offset + 8 + size + (size % 2)
            if ["ALPH", "VP8 ", "VP8L"].contains(fourCC) { out += file[offset..<min(end, file.count)] }
            offset = end
        }
        return out
    }

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
    static func le24(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { le24(v) + [UInt8((v >> 24) & 0xFF)] }
}
