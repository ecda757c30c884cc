import Foundation

/// A plain reference for "the bytes end before the file's end marker", written from the format specifications
/// for the corpus test of ``ImageMetadata``'s `isIncomplete`: JPEG's EOI, PNG's IEND chunk, GIF's trailer. Reads
/// the stream as the reference decoders do (JPEG segments by length, scans up to a marker that is not a restart;
/// PNG chunks by length; GIF blocks and sub-blocks). Nil for another format.
public enum EndMarkerReference {
    /// True when `data` ends before its end marker; nil when it is not a JPEG, PNG or GIF.
    public static func endsEarly(_ data: Data) -> Bool? {
        let b = [UInt8](data)
        if b.starts(with: [0xFF, 0xD8]) { return jpeg(b) }
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return png(b) }
        if b.starts(with: Array("GIF8".utf8)) { return gif(b) }
        return nil
    }

    static func jpeg(_ b: [UInt8]) -> Bool {
        var i = 2
        while true {
            while i < b.count && b[i] != 0xFF { i += 1 }  // bytes between segments
            while i < b.count && b[i] == 0xFF { i += 1 }  // fill
            if i >= b.count { return true }
            let marker = b[i]
            i += 1
            if marker == 0xD9 { return false }
            if marker == 0x00 || marker == 0x01 || (0xD0...0xD8).contains(marker) { continue }
            if i + 2 > b.count { return true }
            let length = Int(b[i]) << 8 | Int(b[i + 1])
            let next = i + max(2, length)  // a length under 2 skips nothing (libjpeg's skip_variable)
            if next > b.count { return true }
            i = next
            guard marker == 0xDA else { continue }
            // Entropy-coded data: FF 00 is data, FF D0…D7 a restart; any other marker ends it.
            scan: while i < b.count {
                if b[i] != 0xFF {
                    i += 1
                    continue
                }
                var j = i + 1
                while j < b.count && b[j] == 0xFF { j += 1 }
                if j >= b.count { return true }
                if b[j] == 0x00 || (0xD0...0xD7).contains(b[j]) {
                    i = j + 1
                } else {
                    i = j - 1
                    break scan
                }
            }
        }
    }

    static func png(_ b: [UInt8]) -> Bool {
        var i = 8
        while i + 12 <= b.count {
            let length = b[i..<i + 4].reduce(0) { $0 << 8 | Int($1) }
            if Array(b[i + 4..<i + 8]) == Array("IEND".utf8) { return false }
            if i + 12 + length > b.count { return true }
            i += 12 + length
        }
        return true
    }

    static func gif(_ b: [UInt8]) -> Bool {
        guard b.count >= 13 else { return true }
        var i = 13 + (b[10] & 0x80 != 0 ? 3 << (Int(b[10] & 7) + 1) : 0)
        func subBlocks() -> Bool {
            while i < b.count {
                let size = Int(b[i])
                i += 1 + size
                if size == 0 { return true }
            }
            return false
        }
        while i < b.count {
            switch b[i] {
            case 0x3B: return false
            case 0x21:
                i += 2
                if !subBlocks() { return true }
            case 0x2C:
                guard i + 10 <= b.count else { return true }
                let packed = b[i + 9]
                i += 10 + (packed & 0x80 != 0 ? 3 << (Int(packed & 7) + 1) : 0) + 1  // + LZW minimum code size
                if !subBlocks() { return true }
            default: return true
            }
        }
        return true
    }
}
