import Foundation

/// An image file format, extensible by plugins.
///
/// A string-backed struct rather than an enum so a plugin can add a format (`extension ImageFormat { static let
/// qoi = ImageFormat(rawValue: "qoi") }`) without touching ImageCore. ``detect(_:)-(Data)`` recognises the built-in
/// formats from their full magic numbers.
public struct ImageFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The format's short lowercase name, e.g. `"jpeg"`.
    public let rawValue: String

    /// Creates a format from its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The name.
    public var description: String { rawValue }

    /// Unknown or not from a file.
    public static let undefined = ImageFormat(rawValue: "undefined")
    /// JPEG (JFIF, EXIF).
    public static let jpeg = ImageFormat(rawValue: "jpeg")
    /// PNG, including APNG.
    public static let png = ImageFormat(rawValue: "png")
    /// GIF 87a / 89a.
    public static let gif = ImageFormat(rawValue: "gif")
    /// WebP (lossy, lossless, animated).
    public static let webp = ImageFormat(rawValue: "webp")
    /// TIFF, either byte order.
    public static let tiff = ImageFormat(rawValue: "tiff")
    /// Windows bitmap.
    public static let bmp = ImageFormat(rawValue: "bmp")
    /// HEIC (HEVC in HEIF): a HEIC brand, or `mif1`/`msf1` with an HEVC (`hvc1`) item.
    public static let heic = ImageFormat(rawValue: "heic")
    /// HEIF with another codec.
    public static let heif = ImageFormat(rawValue: "heif")
    /// AVIF (AV1 in HEIF).
    public static let avif = ImageFormat(rawValue: "avif")
    /// JPEG XL, codestream or container.
    public static let jxl = ImageFormat(rawValue: "jxl")
    /// Windows icon.
    public static let ico = ImageFormat(rawValue: "ico")
    /// SVG (XML text).
    public static let svg = ImageFormat(rawValue: "svg")
    /// PDF.
    public static let pdf = ImageFormat(rawValue: "pdf")

    /// The MIME type for the built-in formats, nil for others.
    public var mimeType: String? {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .tiff: "image/tiff"
        case .bmp: "image/bmp"
        case .heic: "image/heic"
        case .heif: "image/heif"
        case .avif: "image/avif"
        case .jxl: "image/jxl"
        case .ico: "image/x-icon"
        case .svg: "image/svg+xml"
        case .pdf: "application/pdf"
        default: nil
        }
    }

    /// The usual file extension, without the dot; nil for unknown formats.
    public var fileExtension: String? {
        switch self {
        case .jpeg: "jpg"
        case .undefined: nil
        default: rawValue
        }
    }

    /// Detects a built-in format from the first bytes of a file.
    ///
    /// Every check compares the whole signature (8 bytes for PNG, `RIFF….WEBP` for WebP, the `ftyp` brand for
    /// HEIF-family files), never a single byte. Returns nil when nothing matches.
    public static func detect(_ data: Data) -> ImageFormat? {
        data.withUnsafeBytes { detect(UnsafeRawBufferPointer($0)) }
    }

    /// Detects a built-in format from raw bytes; see ``detect(_:)-(Data)``.
    public static func detect(_ bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        let b = bytes
        func has(_ sig: [UInt8], at offset: Int = 0) -> Bool {
            guard b.count >= offset + sig.count else { return false }
            for (i, byte) in sig.enumerated() where b[offset + i] != byte { return false }
            return true
        }
        if has([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if has([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if has(Array("GIF87a".utf8)) || has(Array("GIF89a".utf8)) { return .gif }
        if has(Array("RIFF".utf8)) && has(Array("WEBP".utf8), at: 8) { return .webp }
        if has([0x49, 0x49, 0x2A, 0x00]) || has([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if has(Array("BM".utf8)) && b.count >= 26 && has([0, 0, 0, 0], at: 6) { return .bmp }
        if has([0xFF, 0x0A]) || has([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) { return .jxl }
        if has(Array("%PDF-".utf8)) { return .pdf }
        if has([0, 0, 1, 0]) && b.count >= 6 && (b[4] != 0 || b[5] != 0) && b.count >= 22 { return .ico }
        if let brandFormat = isoBrand(b) { return brandFormat }
        if looksLikeSVG(b) { return .svg }
        return nil
    }

    /// Reads the major and compatible brands of an ISO-BMFF `ftyp` box.
    private static func isoBrand(_ b: UnsafeRawBufferPointer) -> ImageFormat? {
        guard b.count >= 16, b[4] == 0x66, b[5] == 0x74, b[6] == 0x79, b[7] == 0x70 else { return nil }
        let boxSize = Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
        let end = min(max(boxSize, 16), b.count)
        var brands: [String] = []
        var offset = 8
        while offset + 4 <= end {
            if offset != 12 {  // bytes 12..<16 are the minor version, not a brand
                brands.append(String(decoding: b[offset..<offset + 4], as: UTF8.self))
            }
            offset += 4
        }
        if brands.contains(where: { $0 == "avif" || $0 == "avis" }) { return .avif }
        if brands.contains(where: { ["heic", "heix", "heim", "heis", "hevc", "hevx"].contains($0) }) { return .heic }
        if brands.contains(where: { $0 == "mif1" || $0 == "msf1" }) {
            return hasItem(ofType: Array("hvc1".utf8), after: end, in: b) ? .heic : .heif
        }
        return nil
    }

    /// Whether the `iinf` of the `meta` box that follows `ftyp` (within `b`) declares an item of `type`: a
    /// `mif1` file without a HEIC brand whose images are HEVC is HEIC. Every read is bounds-checked.
    private static func hasItem(ofType type: [UInt8], after ftypEnd: Int, in b: UnsafeRawBufferPointer) -> Bool {
        func u32(_ at: Int) -> Int { Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]) }
        func children(_ start: Int, _ end: Int, _ body: (String, Int, Int) -> Bool) {
            var offset = start
            while offset + 8 <= end {
                let size = u32(offset)
                guard size >= 8 else { return }
                let name = String(decoding: b[offset + 4..<offset + 8], as: UTF8.self)
                if !body(name, offset + 8, min(end, offset + size)) { return }
                offset += size
            }
        }
        var found = false
        children(ftypEnd, b.count) { name, start, end in
            guard name == "meta" else { return true }
            children(start + 4, end) { name, start, end in
                guard name == "iinf", end - start >= 6 else { return true }
                children(start + (b[start] == 0 ? 6 : 8), end) { name, start, end in
                    // infe version 2 (16-bit item ID) or 3 (32-bit): the type follows the ID and protection index.
                    guard name == "infe", end - start >= 4, b[start] >= 2 else { return true }
                    let at = start + 4 + (b[start] == 2 ? 2 : 4) + 2
                    if at + 4 <= end, Array(b[at..<at + 4]) == type { found = true }
                    return !found
                }
                return false
            }
            return false
        }
        return found
    }

    /// SVG is text: skip a BOM and whitespace, allow an XML prolog or comments, look for `<svg` early on.
    private static func looksLikeSVG(_ b: UnsafeRawBufferPointer) -> Bool {
        let prefix = String(decoding: b.prefix(1024), as: UTF8.self)
        let trimmed = prefix.drop { $0 == "\u{FEFF}" || $0.isWhitespace }
        guard trimmed.hasPrefix("<") else { return false }
        return trimmed.range(of: "<svg", options: .caseInsensitive) != nil
    }
}
