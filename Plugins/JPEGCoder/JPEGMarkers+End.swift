import Foundation

extension JPEGMarkers {
    /// True when `bytes` end before the EOI marker: where libjpeg's data source runs dry, warns "premature end of
    /// JPEG file" and fills in the rest of the image.
    ///
    /// Walks the stream as libjpeg reads it: marker segments skipped by their length, entropy-coded data after
    /// each SOS up to the next marker other than a restart (`FF 00` is a data byte, `FF FF` fill), bytes between
    /// segments passed over (libjpeg's "extraneous bytes"). Anything after EOI is not looked at.
    static func endsBeforeEOI(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return true }
        var offset = 2
        while true {
            // The next marker: an FF (after any other bytes), its fill FFs, then the code.
            while offset < bytes.count && bytes[offset] != 0xFF { offset += 1 }
            while offset < bytes.count && bytes[offset] == 0xFF { offset += 1 }
            guard offset < bytes.count else { return true }
            let marker = bytes[offset]
            offset += 1
            switch marker {
            case 0xD9:
                return false
            case 0x00, 0x01, 0xD0...0xD8:
                continue  // a stuffed byte outside a scan, TEM, a restart or SOI: no length follows
            default:
                guard offset + 2 <= bytes.count else { return true }
                // libjpeg skips nothing more for a length under 2 (a bad COM), and reads on from there.
                let length = max(2, Int(bytes[offset]) << 8 | Int(bytes[offset + 1]))
                guard offset + length <= bytes.count else { return true }
                offset += length
                if marker == 0xDA { offset = endOfEntropyData(bytes, from: offset) }
            }
        }
    }

    /// The offset of the FF that starts the first marker after entropy-coded data at `start` (other than a
    /// restart), or the end of the bytes.
    private static func endOfEntropyData(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        while index < bytes.count {
            guard bytes[index] == 0xFF else {
                index += 1
                continue
            }
            var next = index + 1
            while next < bytes.count && bytes[next] == 0xFF { next += 1 }
            guard next < bytes.count else { return bytes.count }
            let code = bytes[next]
            if code != 0x00 && !(0xD0...0xD7).contains(code) { return next - 1 }
            index = next + 1
        }
        return bytes.count
    }
}
