import ImageCore

/// Bounds-checked reads of ISO-BMFF boxes from raw bytes: the HEIF container walk runs on untrusted input
/// before libheif sees it, so every read checks its range and a box that overruns its parent is an error.
///
/// Work is linear in the bytes: every box is at least 8 bytes, every loop advances. Thread-safe: a view.
struct HEIFBoxReader {
    let bytes: UnsafeRawBufferPointer

    /// One box: its type and the range of its body (after the header).
    struct Box {
        var type: String
        var body: Range<Int>
        /// True when the header declared more bytes than the parent holds (the body is cut to the parent).
        var isTruncated = false
    }

    /// The boxes in `range`. A box that overruns `range` ends the walk: with `allowTruncation` it is returned cut
    /// to the end and marked (a file cut short); otherwise it throws.
    func boxes(in range: Range<Int>, allowTruncation: Bool = false) throws(ImageError) -> [Box] {
        var result: [Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            guard range.upperBound - offset >= 8 else {
                if allowTruncation { break }
                throw HEIFContainerError.malformed("\(range.upperBound - offset) stray bytes after the last box")
            }
            var size = Int(u32(offset))
            let type = fourCC(at: offset + 4)
            var header = 8
            if size == 1 {
                guard range.upperBound - offset >= 16 else { throw HEIFContainerError.malformed("'\(type)' box cut") }
                let large = u64(offset + 8)
                size = large > UInt64(Int.max) ? Int.max : Int(large)
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header else { throw HEIFContainerError.malformed("'\(type)' box declares size \(size)") }
            if size > range.upperBound - offset {
                guard allowTruncation else {
                    throw HEIFContainerError.malformed("'\(type)' box runs past the end of its parent")
                }
                result.append(Box(type: type, body: (offset + header)..<range.upperBound, isTruncated: true))
                break
            }
            result.append(Box(type: type, body: (offset + header)..<(offset + size)))
            offset += size
        }
        return result
    }

    func u8(_ at: Int) -> UInt8 { bytes[at] }
    func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
    func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) << 16 | UInt32(u16(at + 2)) }
    func u64(_ at: Int) -> UInt64 { UInt64(u32(at)) << 32 | UInt64(u32(at + 4)) }

    /// Four bytes as a type code; non-printable bytes become `?`, so codes compare safely as strings.
    func fourCC(at offset: Int) -> String {
        String(
            decoding: (0..<4).map {
                let b = bytes[offset + $0]; return (32...126).contains(b) ? b : 63
            },
            as: UTF8.self)
    }
}

/// A cursor over one box body: each read checks the remaining length and throws past the end.
struct HEIFCursor {
    let reader: HEIFBoxReader
    var offset: Int
    let end: Int

    init(_ reader: HEIFBoxReader, _ range: Range<Int>) {
        self.reader = reader
        offset = range.lowerBound
        end = range.upperBound
    }

    var remaining: Int { end - offset }

    private mutating func need(_ count: Int) throws(ImageError) {
        guard count <= end - offset else { throw HEIFContainerError.malformed("a box body ends early") }
    }

    mutating func u8() throws(ImageError) -> Int {
        try need(1)
        defer { offset += 1 }
        return Int(reader.u8(offset))
    }

    mutating func u16() throws(ImageError) -> Int {
        try need(2)
        defer { offset += 2 }
        return Int(reader.u16(offset))
    }

    mutating func u32() throws(ImageError) -> Int {
        try need(4)
        defer { offset += 4 }
        return Int(reader.u32(offset))
    }

    /// An unsigned integer of `size` bytes (0, 4 or 8, as `iloc` declares them).
    mutating func uint(size: Int) throws(ImageError) -> UInt64 {
        switch size {
        case 0: return 0
        case 4: return UInt64(try u32())
        case 8:
            try need(8)
            defer { offset += 8 }
            return reader.u64(offset)
        default: throw HEIFContainerError.malformed("iloc field size \(size)")
        }
    }

    mutating func fourCC() throws(ImageError) -> String {
        try need(4)
        defer { offset += 4 }
        return reader.fourCC(at: offset)
    }

    /// Version and flags of a full box.
    mutating func fullBoxHeader() throws(ImageError) -> (version: Int, flags: Int) {
        let word = try u32()
        return (word >> 24, word & 0xFF_FFFF)
    }

    /// A NUL-terminated string (the NUL consumed), at most `limit` bytes kept.
    mutating func cString(limit: Int = 256) throws(ImageError) -> String {
        var bytes: [UInt8] = []
        while true {
            let byte = try u8()
            if byte == 0 { break }
            if bytes.count < limit { bytes.append(UInt8(byte)) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    mutating func skip(_ count: Int) throws(ImageError) {
        try need(count)
        offset += count
    }
}

/// The container errors: every one a `badImageData` at the decode stage, naming what was wrong.
enum HEIFContainerError {
    static func malformed(_ what: String) -> ImageError {
        ImageError(.badImageData, stage: .decode, message: "HEIF: \(what)")
    }
}
