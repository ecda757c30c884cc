import Foundation

/// Counts the frames of a GIF by walking its blocks, without decompressing anything (what ``GIFCoder/probe(_:)``
/// reports): linear in the bytes, about one step per 255-byte sub-block.
enum GIFFrameCount {
    /// The number of image descriptors before the trailer; nil when the bytes end first (a prefix) or are not
    /// GIF blocks (the decoder then says what is wrong).
    static func count(_ data: Data) -> Int? {
        data.withUnsafeBytes { raw -> Int? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= 13 else { return nil }
            var offset = 13
            if bytes[10] & 0x80 != 0 { offset += 3 << (Int(bytes[10] & 0x07) + 1) }  // global colour table
            var frames = 0
            while offset < bytes.count {
                switch bytes[offset] {
                case 0x3B:  // trailer
                    return frames
                case 0x21:  // extension: label, then sub-blocks
                    offset += 2
                case 0x2C:  // image descriptor, local colour table, LZW code size, then sub-blocks
                    guard bytes.count - offset >= 10 else { return nil }
                    let packed = bytes[offset + 9]
                    offset += 10
                    if packed & 0x80 != 0 { offset += 3 << (Int(packed & 0x07) + 1) }
                    offset += 1
                    frames += 1
                default:
                    return nil
                }
                // Sub-blocks: a length byte, that many bytes, until a zero length.
                while true {
                    guard offset < bytes.count else { return nil }
                    let length = Int(bytes[offset])
                    offset += 1 + length
                    if length == 0 { break }
                }
            }
            return nil
        }
    }
}
