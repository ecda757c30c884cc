import Foundation
import ImageCore

/// What the ISO-BMFF boxes of an AVIF file declare, read without libavif and without decoding: the size of the
/// primary item (`ispe`), the image sequence's frame size and sample count, and its looping.
///
/// It lets the coder refuse a decompression bomb (a huge `ispe`, a grid output, a track declaring billions of
/// samples) before libavif allocates its sample tables or the AV1 decoder its frames, and gives ``AVIFCoder``
/// a cheap `probe` that works on the first bytes of a download. Every read is bounds-checked; a box that
/// overruns its parent ends the walk. Thread-safe: a pure function of the bytes.
struct AVIFContainer: Equatable, Sendable {
    /// The `ftyp` major brand.
    var majorBrand: String = ""
    /// The `ftyp` compatible brands.
    var compatibleBrands: [String] = []
    /// The primary item's `ispe` (stored size, before `clap` / `irot` / `imir`), when the file has one.
    var primarySize: PixelSize?
    /// The colour track of an image sequence, when the file has one.
    var track: Track?
    /// True when the walk ended at a box that runs past the end of the bytes (a truncated or prefix file).
    var isTruncated = false

    /// The colour track of an image sequence.
    struct Track: Equatable, Sendable {
        /// `tkhd` width and height (16.16 fixed point, integer part).
        var size: PixelSize
        /// `stsz` sample count: the number of frames.
        var sampleCount: Int
        /// `tkhd` duration in the movie timescale (all ones = indefinite).
        var duration: UInt64
        /// The first `elst` entry's segment duration, when the track has an edit list.
        var editDuration: UInt64?
        /// `elst` flags bit 0: the edit list repeats.
        var editRepeats: Bool
    }

    /// True when libavif's automatic source selection decodes the sequence track: a track exists and the major
    /// brand is not `avif` (libavif 0.11 honours `avis` / `avif` and prefers tracks otherwise).
    var decodesTrack: Bool {
        track != nil && majorBrand != "avif"
    }

    /// The size of the frames libavif will produce (the track's for sequences, else the primary item's).
    var frameSize: PixelSize? { decodesTrack ? track?.size : primarySize }

    /// The number of frames libavif will produce.
    var frameCount: Int { decodesTrack ? (track?.sampleCount ?? 1) : 1 }

    /// Times an image sequence repeats, in the SDK's convention (0 forever): no edit list or a repeating edit
    /// list over an indefinite duration loops forever; a single non-repeating edit plays once; a repeating edit
    /// plays `duration / editDuration` times (rounded up).
    var loopCount: Int {
        guard let track, let edit = track.editDuration else { return 0 }
        guard track.editRepeats else { return 1 }
        if track.duration == UInt64(UInt32.max) || track.duration == UInt64.max || edit == 0 { return 0 }
        let plays = (track.duration / edit) + (track.duration % edit == 0 ? 0 : 1)
        return Int(clamping: max(1, plays))
    }

    /// Walks the boxes of `data`; nil when it does not start with an `ftyp` box.
    static func read(_ data: Data) -> AVIFContainer? {
        data.withUnsafeBytes { read(BoxReader(bytes: $0)) }
    }

    private static func read(_ file: BoxReader) -> AVIFContainer? {
        var result = AVIFContainer()
        var sawFtyp = false
        var primarySizes: [PixelSize] = []
        file.forEachBox(in: 0..<file.bytes.count) { type, body in
            switch type {
            case "ftyp":
                guard !sawFtyp, body.count >= 8 else { return false }
                sawFtyp = true
                result.majorBrand = file.fourCC(at: body.lowerBound) ?? ""
                var offset = body.lowerBound + 8
                while offset + 4 <= body.upperBound {
                    if let brand = file.fourCC(at: offset) { result.compatibleBrands.append(brand) }
                    offset += 4
                }
            case "meta":
                guard sawFtyp else { return false }
                if let size = file.primaryItemSize(meta: body) {
                    primarySizes.append(size)
                }
            case "moov":
                guard sawFtyp else { return false }
                if result.track == nil { result.track = file.colorTrack(moov: body) }
            default:
                guard sawFtyp else { return false }
            }
            return true
        }
        guard sawFtyp else { return nil }
        result.isTruncated = file.truncation.isTruncated
        result.primarySize = primarySizes.first
        return result
    }
}

/// Bounds-checked reads of big-endian fields and boxes over raw bytes.
struct BoxReader {
    /// Set when a box runs past the end of the bytes.
    final class Truncation {
        var isTruncated = false
    }

    let bytes: UnsafeRawBufferPointer
    let truncation = Truncation()

    func u8(_ offset: Int, limit: Int) -> UInt8? {
        offset >= 0 && offset < limit && offset < bytes.count ? bytes[offset] : nil
    }

    func u16(_ offset: Int, limit: Int) -> UInt16? {
        guard let a = u8(offset, limit: limit), let b = u8(offset + 1, limit: limit) else { return nil }
        return UInt16(a) << 8 | UInt16(b)
    }

    func u32(_ offset: Int, limit: Int) -> UInt32? {
        guard let a = u16(offset, limit: limit), let b = u16(offset + 2, limit: limit) else { return nil }
        return UInt32(a) << 16 | UInt32(b)
    }

    func u64(_ offset: Int, limit: Int) -> UInt64? {
        guard let a = u32(offset, limit: limit), let b = u32(offset + 4, limit: limit) else { return nil }
        return UInt64(a) << 32 | UInt64(b)
    }

    func fourCC(at offset: Int) -> String? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        return String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
    }

    /// Calls `body` with each child box's type and payload range inside `range`; stops when `body` returns
    /// false, at a malformed box, or at a box that runs past `range` (setting `truncated` when `range` is
    /// the end of the available bytes: ``truncation`` records it).
    func forEachBox(
        in range: Range<Int>, _ body: (String, Range<Int>) -> Bool
    ) {
        var offset = range.lowerBound
        let end = min(range.upperBound, bytes.count)
        while offset + 8 <= end {
            guard let size32 = u32(offset, limit: end), let type = fourCC(at: offset + 4) else { return }
            var header = 8
            var size = Int(size32)
            if size32 == 1 {
                guard let large = u64(offset + 8, limit: end), large <= UInt64(Int.max) else { return }
                header = 16
                size = Int(large)
            } else if size32 == 0 {
                size = range.upperBound - offset  // the box extends to the end of its parent
            }
            guard size >= header else { return }
            let (boxEnd, overflow) = offset.addingReportingOverflow(size)
            if overflow || boxEnd > end {
                if end == bytes.count { truncation.isTruncated = true }
                // Only the header is known; nested boxes can still be walked up to the available bytes.
                _ = body(type, (offset + header)..<end)
                return
            }
            guard body(type, (offset + header)..<boxEnd) else { return }
            offset = boxEnd
        }
        // A box header cut short by the end of the bytes.
        if offset < end && end == bytes.count { truncation.isTruncated = true }
    }

    /// The `ispe` associated with the primary item (`pitm`) through `iprp` / `ipma`.
    func primaryItemSize(meta: Range<Int>) -> PixelSize? {
        guard meta.count >= 4 else { return nil }
        let boxes = (meta.lowerBound + 4)..<meta.upperBound  // FullBox: version and flags
        var primary: UInt32?
        var properties: [Range<Int>] = []
        var propertyTypes: [String] = []
        var associations: [UInt32: [Int]] = [:]
        forEachBox(in: boxes) { type, body in
            switch type {
            case "pitm":
                guard let version = u8(body.lowerBound, limit: body.upperBound) else { return false }
                primary =
                    version == 0
                    ? u16(body.lowerBound + 4, limit: body.upperBound).map(UInt32.init)
                    : u32(body.lowerBound + 4, limit: body.upperBound)
            case "iprp":
                forEachBox(in: body) { childType, child in
                    if childType == "ipco" {
                        forEachBox(in: child) { propertyType, property in
                            propertyTypes.append(propertyType)
                            properties.append(property)
                            return properties.count < 65_536
                        }
                    } else if childType == "ipma" {
                        readAssociations(child, into: &associations)
                    }
                    return true
                }
            default: break
            }
            return true
        }
        guard let primary, let indices = associations[primary] else { return nil }
        for index in indices where index >= 1 && index <= properties.count && propertyTypes[index - 1] == "ispe" {
            let body = properties[index - 1]
            guard let width = u32(body.lowerBound + 4, limit: body.upperBound),
                let height = u32(body.lowerBound + 8, limit: body.upperBound)
            else { return nil }
            return PixelSize(width: Int(width), height: Int(height))
        }
        return nil
    }

    /// `ipma` entries: item ID → 1-based property indices.
    private func readAssociations(_ body: Range<Int>, into associations: inout [UInt32: [Int]]) {
        let limit = body.upperBound
        guard let version = u8(body.lowerBound, limit: limit), let flags = u8(body.lowerBound + 3, limit: limit),
            let count = u32(body.lowerBound + 4, limit: limit)
        else { return }
        var offset = body.lowerBound + 8
        for _ in 0..<min(Int(count), limit - offset) {
            let item: UInt32?
            if version < 1 {
                item = u16(offset, limit: limit).map(UInt32.init)
                offset += 2
            } else {
                item = u32(offset, limit: limit)
                offset += 4
            }
            guard let item, let associationCount = u8(offset, limit: limit) else { return }
            offset += 1
            var indices: [Int] = []
            for _ in 0..<Int(associationCount) {
                if flags & 1 != 0 {
                    guard let value = u16(offset, limit: limit) else { return }
                    indices.append(Int(value & 0x7FFF))
                    offset += 2
                } else {
                    guard let value = u8(offset, limit: limit) else { return }
                    indices.append(Int(value & 0x7F))
                    offset += 1
                }
            }
            if associations[item] == nil { associations[item] = indices }
        }
    }

    /// The first picture track that is not an auxiliary (alpha) track, as libavif chooses its colour track.
    func colorTrack(moov: Range<Int>) -> AVIFContainer.Track? {
        var found: AVIFContainer.Track?
        forEachBox(in: moov) { type, body in
            guard type == "trak" else { return true }
            if let track = readTrack(body) {
                found = track
                return false
            }
            return true
        }
        return found
    }

    private func readTrack(_ trak: Range<Int>) -> AVIFContainer.Track? {
        var size: PixelSize?
        var duration: UInt64 = 0
        var isAuxiliary = false
        var handler: String?
        var sampleCount: Int?
        var edit: (duration: UInt64, repeats: Bool)?
        forEachBox(in: trak) { type, body in
            let limit = body.upperBound
            switch type {
            case "tkhd":
                guard let version = u8(body.lowerBound, limit: limit) else { return false }
                // v1: creation(8) modification(8) track_ID(4) reserved(4) duration(8); v0: 4-byte times (libavif
                // writes v1).
                let durationOffset = body.lowerBound + 4 + (version == 1 ? 24 : 16)
                duration =
                    (version == 1
                        ? u64(durationOffset, limit: limit) : u32(durationOffset, limit: limit).map(UInt64.init)) ?? 0
                let sizeOffset = durationOffset + (version == 1 ? 8 : 4) + 8 + 8 + 36
                if let width = u32(sizeOffset, limit: limit), let height = u32(sizeOffset + 4, limit: limit) {
                    size = PixelSize(width: Int(width >> 16), height: Int(height >> 16))
                }
            case "tref":
                forEachBox(in: body) { refType, _ in
                    if refType == "auxl" { isAuxiliary = true }
                    return true
                }
            case "edts":
                forEachBox(in: body) { childType, child in
                    guard childType == "elst", let version = u8(child.lowerBound, limit: child.upperBound),
                        let flags = u32(child.lowerBound, limit: child.upperBound),
                        let count = u32(child.lowerBound + 4, limit: child.upperBound), count > 0
                    else { return true }
                    let entry = child.lowerBound + 8
                    let segment =
                        version == 1
                        ? u64(entry, limit: child.upperBound)
                        : u32(entry, limit: child.upperBound).map(UInt64.init)
                    if let segment { edit = (segment, flags & 1 != 0) }
                    return true
                }
            case "mdia":
                forEachBox(in: body) { childType, child in
                    if childType == "hdlr" {
                        if child.count >= 12 { handler = fourCC(at: child.lowerBound + 8) }
                    } else if childType == "minf" {
                        sampleCount = readSampleCount(minf: child) ?? sampleCount
                    }
                    return true
                }
            default: break
            }
            return true
        }
        guard !isAuxiliary, handler == "pict", let size, let sampleCount else { return nil }
        return AVIFContainer.Track(
            size: size, sampleCount: sampleCount, duration: duration, editDuration: edit?.duration,
            editRepeats: edit?.repeats ?? false)
    }

    private func readSampleCount(minf: Range<Int>) -> Int? {
        var count: Int?
        forEachBox(in: minf) { type, stbl in
            guard type == "stbl" else { return true }
            forEachBox(in: stbl) { childType, child in
                if childType == "stsz", let samples = u32(child.lowerBound + 8, limit: child.upperBound) {
                    count = Int(samples)
                } else if childType == "stz2", let samples = u32(child.lowerBound + 8, limit: child.upperBound) {
                    count = Int(samples)
                }
                return true
            }
            return false
        }
        return count
    }
}
