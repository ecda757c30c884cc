import Foundation
import ImageCore

/// Facts read from a PNG's chunk list in Swift, without libpng.
///
/// Reading IHDR ourselves lets the coder enforce the pixel budget on sizes libpng would refuse with a generic
/// error (e.g. a width of 2^31-1) and before libpng allocates anything. Thread-safe: a value.
struct PNGChunks {
    /// The 8-byte PNG signature.
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Declared width (IHDR), as an unsigned 32-bit value.
    var width: Int
    /// Declared height (IHDR).
    var height: Int
    /// IHDR bit depth.
    var bitDepth: Int
    /// IHDR colour type.
    var colorType: Int
    /// IHDR interlace method (1 is Adam7).
    var interlaced: Bool
    /// True when an iCCP chunk appears before the image data.
    var hasICCP = false
    /// The eXIf chunk's bytes (TIFF header onwards), when present.
    var exif: [UInt8]?
    /// A chunk other than IDAT whose declared length runs past the end of the data (type, length). libpng
    /// allocates and zeroes the declared length before it notices the data is missing: a 57-byte file
    /// declaring a 1 GiB sCAL made it zero 1 GiB (found by the png-decode fuzz target).
    var overlongChunk: (type: String, length: Int)?

    /// True when `bytes` starts with the full PNG signature.
    static func hasSignature(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 8 && zip(bytes.prefix(8), signature).allSatisfy { $0 == $1 }
    }

    /// Parses the signature and IHDR; with `scanAll`, walks every chunk header for iCCP and eXIf.
    ///
    /// Returns nil when the signature or the IHDR chunk is missing or truncated.
    static func read(_ data: Data, scanAll: Bool) -> PNGChunks? {
        data.withUnsafeBytes { read($0, scanAll: scanAll) }
    }

    /// See ``read(_:scanAll:)-(Data,_)``.
    static func read(_ bytes: UnsafeRawBufferPointer, scanAll: Bool) -> PNGChunks? {
        guard hasSignature(bytes), bytes.count >= 33 else { return nil }
        func u32(_ offset: Int) -> Int {
            Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
        }
        // IHDR must be the first chunk and 13 bytes long.
        guard u32(8) == 13, bytes[12] == 0x49, bytes[13] == 0x48, bytes[14] == 0x44, bytes[15] == 0x52 else {
            return nil
        }
        var chunks = PNGChunks(
            width: u32(16), height: u32(20), bitDepth: Int(bytes[24]), colorType: Int(bytes[25]),
            interlaced: bytes[28] == 1)
        guard scanAll else { return chunks }
        var offset = 33
        var seenImageData = false
        while offset + 8 <= bytes.count {
            let length = u32(offset)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            let dataStart = offset + 8
            guard length <= bytes.count - dataStart else {
                if type != "IDAT" { chunks.overlongChunk = (type, length) }
                break
            }
            switch type {
            case "iCCP" where !seenImageData: chunks.hasICCP = true
            case "eXIf" where chunks.exif == nil: chunks.exif = Array(bytes[dataStart..<dataStart + length])
            case "IDAT": seenImageData = true
            case "IEND": return chunks
            default: break
            }
            offset = dataStart + length + 4
        }
        return chunks
    }
}
