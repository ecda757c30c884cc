internal import CPNGShim
import Foundation
import ImageCore

/// Turns one APNG frame into a still PNG that Debian's libpng (which has no APNG support) decodes through the
/// simplified API: the signature, an IHDR with the frame's size, the chunks that change how pixels decode, the
/// frame's data as `IDAT`, `IEND`.
///
/// The default image keeps its original IHDR and `IDAT` chunks byte for byte (libpng checks their CRCs as for a
/// still PNG); an `fdAT` frame's payloads, sequence numbers stripped, become one `IDAT` chunk with a fresh CRC.
/// Thread-safe: pure functions.
enum APNGFrameStream {
    /// The still PNG of `frame`, read from `file` (the whole APNG) as `structure` indexes it.
    static func build(
        _ frame: APNGFrameInfo, structure: APNGStructure, file: UnsafeRawBufferPointer
    ) -> [UInt8] {
        var out: [UInt8] = []
        let dataBytes = frame.data.reduce(0) { $0 + $1.count }
        out.reserveCapacity(
            8 + 25 + structure.sharedChunks.reduce(0) { $0 + $1.count } + dataBytes + 12 * (frame.data.count + 2))
        out.append(contentsOf: PNGChunks.signature)
        if frame.isDefaultImage {
            out.append(contentsOf: file[structure.ihdr])
            for chunk in structure.sharedChunks { out.append(contentsOf: file[chunk]) }
            for chunk in structure.imageDataChunks { out.append(contentsOf: file[chunk]) }
        } else {
            var header = Array(file[(structure.ihdr.lowerBound + 8)..<(structure.ihdr.lowerBound + 21)])
            write32(UInt32(frame.width), into: &header, at: 0)
            write32(UInt32(frame.height), into: &header, at: 4)
            appendChunk("IHDR", to: &out) { $0.append(contentsOf: header) }
            for chunk in structure.sharedChunks { out.append(contentsOf: file[chunk]) }
            appendImageData(frame.data, file: file, to: &out)
        }
        appendChunk("IEND", to: &out)
        return out
    }

    /// The facts ``PNGDecoder`` needs about the stream `build` makes for `frame`.
    static func header(of frame: APNGFrameInfo, canvas: PNGChunks) -> PNGChunks {
        var chunks = canvas
        chunks.width = frame.width
        chunks.height = frame.height
        chunks.exif = nil
        return chunks
    }

    /// Appends the frame data as IDAT chunks of at most 1 GiB each (a chunk's length must stay below 2^31).
    private static func appendImageData(_ ranges: [Range<Int>], file: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let limit = 1 << 30
        var pieces: [Range<Int>] = []
        var size = 0
        var emitted = false
        func flush(_ out: inout [UInt8]) {
            appendChunk("IDAT", to: &out) { out in for piece in pieces { out.append(contentsOf: file[piece]) } }
            pieces = []
            size = 0
            emitted = true
        }
        for range in ranges {
            var start = range.lowerBound
            while start < range.upperBound {
                let end = min(range.upperBound, start + (limit - size))
                pieces.append(start..<end)
                size += end - start
                start = end
                if size == limit { flush(&out) }
            }
        }
        if !pieces.isEmpty || !emitted { flush(&out) }
    }

    /// Appends a chunk of `type` whose payload `payload` appends, then its length and CRC.
    static func appendChunk(_ type: String, to out: inout [UInt8], payload: (inout [UInt8]) -> Void = { _ in }) {
        let lengthAt = out.count
        out.append(contentsOf: [0, 0, 0, 0])
        let typeAt = out.count
        out.append(contentsOf: Array(type.utf8))
        payload(&out)
        write32(UInt32(out.count - typeAt - 4), into: &out, at: lengthAt)
        let crc = out.withUnsafeBufferPointer { buffer in
            pngshim_crc32(0, buffer.baseAddress.map { $0 + typeAt }, buffer.count - typeAt)
        }
        out.append(contentsOf: [0, 0, 0, 0])
        write32(crc, into: &out, at: out.count - 4)
    }

    static func write32(_ value: UInt32, into bytes: inout [UInt8], at offset: Int) {
        bytes[offset] = UInt8(value >> 24)
        bytes[offset + 1] = UInt8(value >> 16 & 0xFF)
        bytes[offset + 2] = UInt8(value >> 8 & 0xFF)
        bytes[offset + 3] = UInt8(value & 0xFF)
    }
}
