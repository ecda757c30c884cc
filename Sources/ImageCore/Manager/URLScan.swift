import Foundation

/// Reads the parts of a URL every load needs (has it a scheme, the extension of its path) from its absolute string,
/// without Foundation's component parsing, which costs several times a whole memory hit.
///
/// Each scan decides only the plain shapes it can read with certainty (no percent escapes, no `;` parameters, no
/// trailing slash, no base URL) and asks Foundation for everything else, so the answers are Foundation's
/// (`URLScanTests` compares them over many shapes).
enum URLScan {
    /// A short extension (1–5 ASCII letters or digits, lowercased) held inline: no string is made for it.
    struct ShortExtension: Equatable {
        /// The bytes, first byte lowest.
        let packed: UInt64
        let count: Int

        /// The extension in `bytes` (the scan's path: a plain loop over at most five bytes, inlined into it rather
        /// than a call of its own per key).
        @inline(__always)
        init?(lowercasing bytes: UnsafeBufferPointer<UInt8>) {
            guard let start = bytes.baseAddress, (1...5).contains(bytes.count) else { return nil }
            var packed: UInt64 = 0
            for index in 0..<bytes.count {
                let byte = start[index]
                // ASCII letters and digits only; `| 0x20` folds A–Z onto a–z and leaves digits as they are.
                guard URLScan.isAlphanumeric(byte) else { return nil }
                packed |= UInt64(byte | (byte >= 0x41 ? 0x20 : 0)) << UInt64(index &* 8)
            }
            self.packed = packed
            self.count = bytes.count
        }

        init?(lowercasing bytes: some Collection<UInt8>) {
            guard (1...5).contains(bytes.count) else { return nil }
            var packed: UInt64 = 0
            var shift: UInt64 = 0
            for byte in bytes {
                guard URLScan.isAlphanumeric(byte) else { return nil }
                packed |= UInt64(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) << shift
                shift += 8
            }
            self.packed = packed
            self.count = bytes.count
        }

        /// The extension as a string.
        var string: String {
            withUnsafeBytes(of: packed.littleEndian) { String(decoding: $0.prefix(count), as: UTF8.self) }
        }
    }

    /// True when `url` has a scheme (what `url.scheme != nil` says).
    static func hasScheme(_ url: URL, absoluteString: String) -> Bool {
        plainSchemeEnd(url, absoluteString: absoluteString) != nil || url.scheme != nil
    }

    /// The index of the `:` that ends the scheme `absoluteString` starts with, when `url` has no base URL (a URL
    /// the scans may read on their own); nil otherwise. A load finds it once and hands it to the key builder's
    /// extension scan, which then does not read the scheme again.
    static func plainSchemeEnd(_ url: URL, absoluteString: String) -> Int? {
        guard let colon = absoluteString.utf8.withContiguousStorageIfAvailable(schemeEnd) ?? nil else { return nil }
        return url.baseURL == nil ? colon : nil
    }

    /// The URL path's extension, lowercased, when it is 1–5 ASCII letters or digits; else nil. Keys end in it, so
    /// the disk cache names files after the image type. `schemeEnd` is ``plainSchemeEnd(_:absoluteString:)`` when
    /// the caller has it.
    static func shortExtension(of url: URL, absoluteString: String, schemeEnd: Int? = nil) -> ShortExtension? {
        if let schemeEnd, case .decided(let ext) = scanShortExtension(absoluteString, schemeEnd: schemeEnd) {
            return ext
        }
        if url.baseURL == nil, case .decided(let ext) = scanShortExtension(absoluteString) { return ext }
        return foundationShortExtension(of: url)
    }

    /// ``shortExtension(of:absoluteString:schemeEnd:)`` for a caller that holds the absolute string's bytes: the
    /// scan reads them as they are, and only a shape it leaves undecided takes the string path.
    @inline(__always)
    static func shortExtension(
        of url: URL, bytes: UnsafeBufferPointer<UInt8>, absoluteString: String, schemeEnd: Int?
    ) -> ShortExtension? {
        if let schemeEnd, case .decided(let ext) = scanShortExtension(bytes, schemeEnd: schemeEnd) { return ext }
        return shortExtension(of: url, absoluteString: absoluteString)
    }

    /// The rule applied to Foundation's `pathExtension`: the reference the scan must agree with.
    static func foundationShortExtension(of url: URL) -> ShortExtension? {
        ShortExtension(lowercasing: url.pathExtension.utf8)
    }

    /// What a scan concluded.
    enum Scan: Equatable {
        /// The short extension, or nil for "none".
        case decided(ShortExtension?)
        /// The shape needs Foundation.
        case undecided
    }

    /// Scans an absolute URL string for its short extension: finds where the path ends (the first `?` or `#`),
    /// then reads its last component backwards, so only that component is looked at byte by byte.
    /// `schemeEnd`, when given, is where the string's scheme ends (so it is not scanned again).
    static func scanShortExtension(_ string: String, schemeEnd knownEnd: Int? = nil) -> Scan {
        string.utf8.withContiguousStorageIfAvailable { bytes in scanShortExtension(bytes, schemeEnd: knownEnd) }
            ?? .undecided
    }

    /// ``scanShortExtension(_:schemeEnd:)`` over the absolute string's bytes, for a caller that holds them already
    /// (the key builder reads them once for the escape check, the scan and the copy).
    @inline(__always)
    static func scanShortExtension(_ bytes: UnsafeBufferPointer<UInt8>, schemeEnd knownEnd: Int?) -> Scan {
        guard let colon = knownEnd ?? schemeEnd(bytes), colon < bytes.count, let base = bytes.baseAddress else {
            return .undecided
        }
        let hasAuthority = colon + 2 < bytes.count && bytes[colon + 1] == slash && bytes[colon + 2] == slash
        // The path (or, without a path, the authority) ends at the query or the fragment.
        let rest = colon + 1
        var pathEnd = bytes.count
        if let end = firstQueryOrFragment(base, from: rest, to: bytes.count) { pathEnd = end }
        // An authority holds no `/`: the last `/` after it starts the last path component.
        let lowest = hasAuthority ? colon + 3 : rest
        guard pathEnd > lowest, bytes[pathEnd - 1] != slash else { return .undecided }
        var index = pathEnd - 1
        var lastDot = -1
        while index >= lowest, bytes[index] != slash {
            switch bytes[index] {
            case percent, semicolon: return .undecided
            case dot where lastDot < 0: lastDot = index
            default: break
            }
            index -= 1
        }
        // No `/` after the authority: no path at all.
        if hasAuthority && index < lowest { return .undecided }
        let componentStart = index + 1
        // No dot in the last component, or a stem (what comes before the last dot) of "", "." or ".."
        // (`.png`, `..png`, `...png`: a hidden name, as Foundation reads it; `....png` has the extension).
        guard lastDot > componentStart else { return .decided(nil) }
        let stemLength = lastDot - componentStart
        if stemLength <= 2 && bytes[componentStart] == dot && bytes[lastDot - 1] == dot {
            return .decided(nil)
        }
        let ext = ShortExtension(lowercasing: UnsafeBufferPointer(rebasing: bytes[(lastDot + 1)..<pathEnd]))
        return .decided(ext)
    }

    /// The index of the first `?` or `#` in `start[from..<end]`, eight bytes per step (one pass for both).
    @inline(__always)
    private static func firstQueryOrFragment(_ start: UnsafePointer<UInt8>, from: Int, to end: Int) -> Int? {
        let raw = UnsafeRawPointer(start)
        var index = from
        while index + 8 <= end {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let mask = zeroBytes(word ^ 0x3F3F_3F3F_3F3F_3F3F) | zeroBytes(word ^ 0x2323_2323_2323_2323)
            if mask != 0 { return index + mask.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < end {
            if start[index] == question || start[index] == hash { return index }
            index += 1
        }
        return nil
    }

    /// The high bit of every zero byte of `word`, and no other bit (exact: no borrow crosses bytes).
    @inline(__always)
    private static func zeroBytes(_ word: UInt64) -> UInt64 {
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        return ~(((word & low7) &+ low7) | word | low7)
    }

    /// The index of the `:` that ends a valid scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`), if any.
    private static func schemeEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        // Most URLs are http(s): recognise those four letters at once (ASCII case folded).
        if bytes.count >= 6, let base = bytes.baseAddress,
            UnsafeRawPointer(base).loadUnaligned(as: UInt32.self) | 0x2020_2020 == http
        {
            if bytes[4] == colon { return 4 }
            if bytes[4] | 0x20 == UInt8(ascii: "s"), bytes[5] == colon { return 5 }
        }
        guard let first = bytes.first, isLetter(first) else { return nil }
        var index = 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == colon { return index }
            guard isSchemeByte(byte) else { return nil }
            index += 1
        }
        return nil
    }

    /// ALPHA / DIGIT / "+" / "-" / ".": one bit per ASCII byte (bytes 0–63 in the low word, 64–127 in the high).
    private static let schemeBytesLow: UInt64 = (0x3FF << 0x30) | (1 << 0x2B) | (1 << 0x2D) | (1 << 0x2E)
    private static let schemeBytesHigh: UInt64 = (0x3FF_FFFF << 1) | (0x3FF_FFFF << 33)

    /// True when `byte` may follow a scheme's first letter: one table lookup instead of five comparisons.
    @inline(__always)
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        let bit = UInt64(byte & 63)
        switch byte >> 6 {
        case 0: return (schemeBytesLow >> bit) & 1 != 0
        case 1: return (schemeBytesHigh >> bit) & 1 != 0
        default: return false
        }
    }

    @inline(__always)
    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) &- 0x61 < 26 }
    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }
    @inline(__always)
    fileprivate static func isAlphanumeric(_ byte: UInt8) -> Bool { isLetter(byte) || isDigit(byte) }

    /// "http" as a little-endian `UInt32`.
    private static let http = UInt32(littleEndian: 0x7074_7468)
    private static let colon = UInt8(ascii: ":")
    private static let slash = UInt8(ascii: "/")
    private static let question = UInt8(ascii: "?")
    private static let hash = UInt8(ascii: "#")
    private static let percent = UInt8(ascii: "%")
    private static let semicolon = UInt8(ascii: ";")
    private static let dot = UInt8(ascii: ".")
    private static let plus = UInt8(ascii: "+")
    private static let minus = UInt8(ascii: "-")
}
