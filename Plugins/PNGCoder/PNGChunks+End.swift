import Foundation

extension PNGChunks {
    /// True when `bytes` end before a whole IEND chunk: the chunk walk from IHDR runs past the end of the data.
    ///
    /// Chunks are skipped by their declared length (and CRC), as libpng reads them; anything after IEND is not
    /// looked at.
    static func endsBeforeIEND(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = signature.count
        while offset <= bytes.count - 12 {
            let length =
                Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
            if bytes[offset + 4] == 0x49, bytes[offset + 5] == 0x45, bytes[offset + 6] == 0x4E,
                bytes[offset + 7] == 0x44
            {
                return false  // IEND (length 0) and its CRC are all there
            }
            guard length <= bytes.count - offset - 12 else { return true }
            offset += 12 + length
        }
        return true
    }
}
