import Foundation
import ImageCore

/// What the marker segments before the first scan say: EXIF orientation, ICC profile, Adobe transform, SOF type.
///
/// Parsed in Swift with bounds checks on every read, so a hostile segment can only make a field nil.
/// Thread-safe: a value.
struct JPEGMarkers {
    /// The EXIF orientation from APP1, when present and valid.
    var orientation: ImageOrientation?
    /// The EXIF block (TIFF header onwards) from the first `Exif` APP1.
    var exif: [UInt8]?
    /// The ICC profile reassembled from every APP2 `ICC_PROFILE` chunk, when the set is complete.
    var iccProfile: [UInt8]?
    /// True when an Adobe APP14 segment is present (its CMYK data is stored inverted).
    var hasAdobe = false
    /// True when the frame is progressive (SOF2, SOF6, SOF10, SOF14).
    var isProgressive = false
    /// Offset of the first SOS marker, when the prefix reaches it.
    var firstScanOffset: Int?

    /// Walks the segments of `bytes` from SOI up to the first SOS (or the end of the prefix).
    static func scan(_ bytes: UnsafeRawBufferPointer) -> JPEGMarkers {
        var result = JPEGMarkers()
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return result }
        var iccChunks: [Int: ArraySlice<UInt8>] = [:]
        var iccCount = 0
        var offset = 2
        while offset + 4 <= bytes.count {
            guard bytes[offset] == 0xFF else { break }
            var markerOffset = offset + 1
            while markerOffset < bytes.count && bytes[markerOffset] == 0xFF { markerOffset += 1 }  // fill bytes
            guard markerOffset + 2 < bytes.count else { break }
            let marker = bytes[markerOffset]
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                offset = markerOffset + 1
                continue
            }
            let length = Int(bytes[markerOffset + 1]) << 8 | Int(bytes[markerOffset + 2])
            let start = markerOffset + 3
            let end = markerOffset + 1 + length
            guard length >= 2 else { break }
            if marker == 0xDA {
                result.firstScanOffset = markerOffset - 1
                break
            }
            guard end <= bytes.count else { break }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            switch marker {
            case 0xE1 where result.exif == nil && hasPrefix(payload, "Exif\0\0"):
                let tiff = Array(payload[6...])
                result.exif = tiff
                result.orientation = EXIFOrientation.parse(tiff)
            case 0xE2 where hasPrefix(payload, "ICC_PROFILE\0") && payload.count > 14:
                let sequence = Int(payload[12])
                iccCount = Int(payload[13])
                iccChunks[sequence] = ArraySlice(payload[14...])
            case 0xEE where hasPrefix(payload, "Adobe"):
                result.hasAdobe = true
            case 0xC2, 0xC6, 0xCA, 0xCE:
                result.isProgressive = true
            default:
                break
            }
            offset = end
        }
        if iccCount > 0, iccChunks.count == iccCount, (1...iccCount).allSatisfy({ iccChunks[$0] != nil }) {
            result.iccProfile = (1...iccCount).flatMap { iccChunks[$0]! }
        }
        return result
    }

    /// The number of SOS markers in `bytes` (scans started), counting entropy-coded data byte by byte.
    ///
    /// Inside entropy-coded data 0xFF is always followed by 0x00 or a restart marker, so FF DA there is a real SOS;
    /// headers before the first scan are skipped by length so an embedded EXIF thumbnail is never counted.
    static func scanCount(_ bytes: UnsafeRawBufferPointer, firstScanOffset: Int) -> Int {
        var count = 0
        var index = firstScanOffset
        while index + 1 < bytes.count {
            if bytes[index] == 0xFF && bytes[index + 1] == 0xDA { count += 1 }
            index += 1
        }
        return count
    }

    private static func hasPrefix(_ payload: UnsafeRawBufferPointer, _ text: String) -> Bool {
        let signature = Array(text.utf8)
        return payload.count >= signature.count && zip(payload, signature).allSatisfy { $0 == $1 }
    }
}

/// Reads the Orientation tag (0x0112) of IFD0 from an EXIF TIFF block.
enum EXIFOrientation {
    /// The orientation, or nil when the block is malformed or has no valid tag.
    static func parse(_ tiff: [UInt8]) -> ImageOrientation? {
        guard tiff.count >= 8 else { return nil }
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= tiff.count else { return nil }
            return little ? Int(tiff[at]) | Int(tiff[at + 1]) << 8 : Int(tiff[at]) << 8 | Int(tiff[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let a = u16(at), let b = u16(at + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard u16(2) == 42, let ifd = u32(4), let entries = u16(ifd) else { return nil }
        for index in 0..<min(entries, 512) {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry) else { return nil }
            if tag == 0x0112 {
                guard u16(entry + 2) == 3, let value = u16(entry + 8) else { return nil }
                return ImageOrientation(rawValue: value)
            }
        }
        return nil
    }

    /// A minimal big-endian EXIF block carrying only `orientation`, for the encoder.
    static func block(for orientation: ImageOrientation) -> [UInt8] {
        let value = UInt8(orientation.rawValue)
        return [
            0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08,  // header, IFD0 at 8
            0x00, 0x01,  // one entry
            0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, value, 0x00, 0x00,  // Orientation SHORT 1
            0x00, 0x00, 0x00, 0x00,  // no next IFD
        ]
    }
}
