import Foundation
import ImageCore

/// What the coder reads from a JPEG XL file in Swift, before libjxl sees it: the container boxes (when there is a
/// container), the codestream's `SizeHeader` and the `Exif` box.
///
/// Reading the size ourselves lets the pixel budget refuse a bomb before libjxl parses anything (libjxl 0.7 fails
/// some huge headers with a generic error, which would otherwise read as `badImageData`), and works on a prefix,
/// so a download can be cut once its header arrived. Thread-safe: a value.
struct JXLHeader: Sendable, Equatable {
    /// Width as stored (before orientation).
    var width: Int
    /// Height as stored.
    var height: Int
    /// True for the ISO-BMFF container (`JXL ` signature box), false for a bare codestream (`FF 0A`).
    var isContainer: Bool
    /// The `Exif` box's EXIF bytes (from the TIFF header on), when the container has one in the bytes given.
    var exif: [UInt8]?
    /// The image metadata's `have_animation`; nil when the bytes end before it.
    var isAnimated: Bool?
    /// The image metadata's orientation; nil when the bytes end before it.
    var orientation: ImageOrientation?

    /// The bare-codestream signature.
    static let codestreamSignature: [UInt8] = [0xFF, 0x0A]
    /// The container's signature box.
    static let containerSignature: [UInt8] = [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]

    /// The most EXIF bytes kept (larger boxes are ignored rather than copied).
    static let maxExifBytes = 1 << 20

    /// True when `bytes` starts with either full signature.
    static func hasSignature(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.starts(with: codestreamSignature) || bytes.starts(with: containerSignature)
    }

    /// Reads the header from `bytes` (a whole file or a prefix); nil when the signature is missing or the size
    /// header has not arrived yet (or the container holds no codestream box before the bytes end).
    static func read(_ bytes: UnsafeRawBufferPointer) -> JXLHeader? {
        if bytes.starts(with: codestreamSignature) {
            return parse(Array(bytes.prefix(codestreamPrefix)), isContainer: false, exif: nil)
        }
        guard bytes.starts(with: containerSignature) else { return nil }
        var codestream: [UInt8] = []
        var exif: [UInt8]?
        var offset = 0
        while offset + 8 <= bytes.count {
            var size = u32(bytes, offset)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            var headerSize = 8
            if size == 1 {
                guard offset + 16 <= bytes.count else { break }
                let large = UInt64(u32(bytes, offset + 8)) << 32 | UInt64(u32(bytes, offset + 12))
                size = large > UInt64(Int.max) ? Int.max : Int(large)
                headerSize = 16
            }
            // Size 0: the box runs to the end of the file. A box may claim more than the bytes hold (a prefix, or
            // an overrun libjxl tolerates): read what is there.
            let end =
                size == 0 ? bytes.count : (size < headerSize ? -1 : offset.addingReportingOverflow(size).partialValue)
            guard end >= offset + headerSize else { return nil }
            let payload = (offset + headerSize)..<min(end, bytes.count)
            switch type {
            case "jxlc" where codestream.count < codestreamPrefix:
                codestream += bytes[payload].prefix(codestreamPrefix - codestream.count)
            case "jxlp" where codestream.count < codestreamPrefix && payload.count >= 4:
                codestream += bytes[payload].dropFirst(4).prefix(codestreamPrefix - codestream.count)
            case "Exif" where exif == nil && end <= bytes.count && payload.count >= 4:
                let tiff = u32(bytes, payload.lowerBound)
                let start = payload.lowerBound + 4
                if tiff <= payload.upperBound - start, payload.upperBound - start - tiff <= maxExifBytes {
                    exif = Array(bytes[(start + tiff)..<payload.upperBound])
                }
            default: break
            }
            guard end > offset, end < bytes.count else { break }
            offset = end
        }
        guard codestream.starts(with: codestreamSignature) else { return nil }
        return parse(codestream, isContainer: true, exif: exif)
    }

    /// Codestream bytes read: the size header and the start of the image metadata fit well within them.
    private static let codestreamPrefix = 64

    /// The size header, then what the image metadata's start tells (animation flag, orientation) if present.
    private static func parse(_ codestream: [UInt8], isContainer: Bool, exif: [UInt8]?) -> JXLHeader? {
        var reader = BitReader(bytes: codestream, position: 16)
        guard let size = sizeHeader(&reader) else { return nil }
        var header = JXLHeader(width: size.width, height: size.height, isContainer: isContainer, exif: exif)
        if let (animated, orientation) = imageMetadataStart(&reader) {
            header.isAnimated = animated
            header.orientation = orientation
        }
        return header
    }

    /// Parses a `SizeHeader` (ISO/IEC 18181-1, A.2): the one after the signature, or the intrinsic size.
    static func sizeHeader(_ reader: inout BitReader) -> (width: Int, height: Int)? {
        func dimension(small: Bool) -> Int? {
            if small { return reader.read(5).map { ($0 + 1) * 8 } }
            return reader.u32([(0, 9), (0, 13), (0, 18), (0, 30)]).map { $0 + 1 }
        }
        guard let small = reader.read(1), let height = dimension(small: small == 1), let ratio = reader.read(3) else {
            return nil
        }
        return withRatio(ratio, height: height) { dimension(small: small == 1) }
    }

    /// Parses a `PreviewHeader` (A.3), whose sizes use other distributions.
    static func previewHeader(_ reader: inout BitReader) -> (width: Int, height: Int)? {
        func dimension(div8: Bool) -> Int? {
            if div8 { return reader.u32([(16, 0), (32, 0), (1, 5), (33, 9)]).map { $0 * 8 } }
            return reader.u32([(1, 6), (65, 8), (321, 10), (1345, 12)])
        }
        guard let div8 = reader.read(1), let height = dimension(div8: div8 == 1), let ratio = reader.read(3) else {
            return nil
        }
        return withRatio(ratio, height: height) { dimension(div8: div8 == 1) }
    }

    private static func withRatio(
        _ ratio: Int, height: Int, width: () -> Int?
    ) -> (width: Int, height: Int)? {
        guard ratio != 0 else { return width().map { ($0, height) } }
        let (numerator, denominator) = [(1, 1), (12, 10), (4, 3), (3, 2), (16, 9), (5, 4), (2, 1)][ratio - 1]
        return (height * numerator / denominator, height)
    }

    /// The start of `ImageMetadata` (A.6): `all_default`, then with `extra_fields` the orientation, the intrinsic
    /// size, the preview header and `have_animation`.
    static func imageMetadataStart(_ reader: inout BitReader) -> (animated: Bool, orientation: ImageOrientation)? {
        guard let allDefault = reader.read(1) else { return nil }
        if allDefault == 1 { return (false, .up) }
        guard let extraFields = reader.read(1) else { return nil }
        if extraFields == 0 { return (false, .up) }
        guard let orientation = reader.read(3), let intrinsic = reader.read(1) else { return nil }
        if intrinsic == 1 && sizeHeader(&reader) == nil { return nil }
        guard let preview = reader.read(1) else { return nil }
        if preview == 1 && previewHeader(&reader) == nil { return nil }
        guard let animation = reader.read(1) else { return nil }
        return (animation == 1, ImageOrientation(rawValue: orientation + 1) ?? .up)
    }

    /// Reads bits least-significant first, as the JPEG XL codestream stores them.
    struct BitReader {
        let bytes: [UInt8]
        var position: Int

        mutating func read(_ count: Int) -> Int? {
            guard position + count <= bytes.count * 8 else { return nil }
            var value = 0
            for bit in 0..<count {
                let index = position + bit
                value |= Int(bytes[index >> 3] >> UInt8(index & 7) & 1) << bit
            }
            position += count
            return value
        }

        /// A `U32` field: 2 selector bits, then `bits` more bits added to `offset` of the chosen distribution.
        mutating func u32(_ distributions: [(offset: Int, bits: Int)]) -> Int? {
            guard let selector = read(2) else { return nil }
            let (offset, bits) = distributions[selector]
            return read(bits).map { $0 + offset }
        }
    }

    private static func u32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> Int {
        Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
    }
}
