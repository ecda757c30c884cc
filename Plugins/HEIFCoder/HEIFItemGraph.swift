import Foundation
import ImageCore

/// The `meta` box of a HEIF file as parsed by the coder itself: items (`iinf`), references (`iref`), locations
/// (`iloc`), properties and their associations (`iprp`: `ipco` + `ipma`), inline data (`idat`), the primary item
/// (`pitm`), plus the `ftyp` brands and whether a `moov` (image sequence) follows.
///
/// libheif 1.15 trusts this graph: a reference cycle or a grid without its tiles can make it loop, recurse or
/// fail deep inside. The coder parses it first (linear in the bytes, every read bounds-checked) and
/// ``HEIFValidator`` checks it before libheif runs. Thread-safe: a value.
struct HEIFItemGraph {
    /// An item of `iinf`.
    struct Item {
        var type: String
        var isHidden: Bool
    }

    /// Where an item's bytes are (`iloc`).
    struct Location {
        /// 0: offsets into the file; 1: into `idat`; 2: into another item (libheif 1.15 does not support it).
        var constructionMethod: Int
        var dataReferenceIndex: Int
        var extents: [(offset: UInt64, length: UInt64)]
    }

    /// A property of `ipco`; only the body of the properties the coder reads is kept.
    struct Property {
        var type: String
        var body: [UInt8]
    }

    var majorBrand = ""
    var brands: [String] = []
    var primaryID: UInt32?
    var items: [UInt32: Item] = [:]
    /// References by source item, then type, targets in file order (several boxes of one type append).
    var references: [UInt32: [String: [UInt32]]] = [:]
    var locations: [UInt32: Location] = [:]
    var properties: [Property] = []
    /// 1-based `ipco` indices by item, in `ipma` order (index 0, "none", dropped).
    var associations: [UInt32: [Int]] = [:]
    var idat: Range<Int>?
    var hasMovie = false
    var fileLength = 0

    /// Properties whose body the coder reads.
    static let readProperties: Set<String> = ["ispe", "irot", "imir", "clap", "pixi", "auxC", "hvcC", "av1C"]

    /// Parses the top-level boxes and the `meta` box of `bytes`.
    ///
    /// - Throws: ``ImageError`` `badImageData`: no `ftyp`, no `meta` (an image sequence only, which libheif 1.15
    ///   cannot decode), a `meta` cut short, or a malformed box.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(ImageError) -> HEIFItemGraph {
        let reader = HEIFBoxReader(bytes: bytes)
        var graph = HEIFItemGraph()
        graph.fileLength = bytes.count
        let top = try reader.boxes(in: 0..<bytes.count, allowTruncation: true)
        guard let ftyp = top.first, ftyp.type == "ftyp", !ftyp.isTruncated, ftyp.body.count >= 8 else {
            throw HEIFContainerError.malformed("the file does not start with an 'ftyp' box")
        }
        graph.majorBrand = reader.fourCC(at: ftyp.body.lowerBound)
        var offset = ftyp.body.lowerBound + 8
        while offset + 4 <= ftyp.body.upperBound {
            graph.brands.append(reader.fourCC(at: offset))
            offset += 4
        }
        graph.hasMovie = top.contains { $0.type == "moov" }
        let metas = top.filter { $0.type == "meta" }
        guard let meta = metas.first else {
            throw HEIFContainerError.malformed(
                graph.hasMovie
                    ? "an image sequence without a primary image (libheif 1.15 decodes no sequences)"
                    : "no 'meta' box")
        }
        guard !meta.isTruncated else { throw HEIFContainerError.malformed("the 'meta' box is cut short (truncated)") }
        guard metas.count == 1 else { throw HEIFContainerError.malformed("\(metas.count) top-level 'meta' boxes") }
        try graph.readMeta(meta.body, reader)
        return graph
    }

    private mutating func readMeta(_ body: Range<Int>, _ reader: HEIFBoxReader) throws(ImageError) {
        var cursor = HEIFCursor(reader, body)
        let (version, _) = try cursor.fullBoxHeader()
        guard version == 0 else { throw HEIFContainerError.malformed("'meta' box version \(version)") }
        var handler: String?
        for box in try reader.boxes(in: cursor.offset..<body.upperBound) {
            switch box.type {
            case "hdlr":
                var c = HEIFCursor(reader, box.body)
                _ = try c.fullBoxHeader()
                try c.skip(4)
                handler = try c.fourCC()
            case "pitm":
                var c = HEIFCursor(reader, box.body)
                let (v, _) = try c.fullBoxHeader()
                primaryID = UInt32(v == 0 ? try c.u16() : try c.u32())
            case "iinf": try readItemInfo(box.body, reader)
            case "iref": try readReferences(box.body, reader)
            case "iloc": try readLocations(box.body, reader)
            case "iprp": try readProperties(box.body, reader)
            case "idat": idat = box.body
            default: break
            }
        }
        guard handler == "pict" else {
            throw HEIFContainerError.malformed("the 'meta' handler is '\(handler ?? "missing")', not 'pict'")
        }
    }

    private mutating func readItemInfo(_ body: Range<Int>, _ reader: HEIFBoxReader) throws(ImageError) {
        var cursor = HEIFCursor(reader, body)
        let (version, _) = try cursor.fullBoxHeader()
        _ = version == 0 ? try cursor.u16() : try cursor.u32()  // the entry count; the boxes themselves count
        for box in try reader.boxes(in: cursor.offset..<body.upperBound) where box.type == "infe" {
            var c = HEIFCursor(reader, box.body)
            let (v, flags) = try c.fullBoxHeader()
            guard v >= 2 else { continue }  // versions 0 and 1 carry no item type: nothing libheif decodes
            let id = UInt32(v == 2 ? try c.u16() : try c.u32())
            _ = try c.u16()  // protection index
            let type = try c.fourCC()
            guard items[id] == nil else { throw HEIFContainerError.malformed("item \(id) is declared twice") }
            items[id] = Item(type: type, isHidden: flags & 1 != 0)
        }
    }

    private mutating func readReferences(_ body: Range<Int>, _ reader: HEIFBoxReader) throws(ImageError) {
        var cursor = HEIFCursor(reader, body)
        let (version, _) = try cursor.fullBoxHeader()
        for box in try reader.boxes(in: cursor.offset..<body.upperBound) {
            var c = HEIFCursor(reader, box.body)
            let from = UInt32(version == 0 ? try c.u16() : try c.u32())
            let count = try c.u16()
            var targets: [UInt32] = []
            targets.reserveCapacity(min(count, c.remaining / 2))
            for _ in 0..<count { targets.append(UInt32(version == 0 ? try c.u16() : try c.u32())) }
            references[from, default: [:]][box.type, default: []].append(contentsOf: targets)
        }
    }

    private mutating func readLocations(_ body: Range<Int>, _ reader: HEIFBoxReader) throws(ImageError) {
        var c = HEIFCursor(reader, body)
        let (version, _) = try c.fullBoxHeader()
        guard version <= 2 else { throw HEIFContainerError.malformed("'iloc' version \(version)") }
        let sizes = try c.u16()
        let offsetSize = sizes >> 12
        let lengthSize = sizes >> 8 & 0xF
        let baseOffsetSize = sizes >> 4 & 0xF
        let indexSize = version >= 1 ? sizes & 0xF : 0
        let count = version < 2 ? try c.u16() : try c.u32()
        // Extents of zero-byte fields consume no input, so their number is bounded here instead.
        var extentBudget = HEIFLimits.maxExtents
        for _ in 0..<count {
            let id = UInt32(version < 2 ? try c.u16() : try c.u32())
            let method = version >= 1 ? (try c.u16()) & 0xF : 0
            let dataReference = try c.u16()
            let base = try c.uint(size: baseOffsetSize)
            let extentCount = try c.u16()
            extentBudget -= extentCount
            guard extentBudget >= 0 else {
                throw HEIFContainerError.malformed("'iloc' declares more than \(HEIFLimits.maxExtents) extents")
            }
            var extents: [(UInt64, UInt64)] = []
            extents.reserveCapacity(min(extentCount, 64))
            for _ in 0..<extentCount {
                _ = try c.uint(size: indexSize)
                let offset = try c.uint(size: offsetSize)
                let length = try c.uint(size: lengthSize)
                let (start, overflow) = base.addingReportingOverflow(offset)
                guard !overflow else { throw HEIFContainerError.malformed("iloc offset of item \(id) overflows") }
                extents.append((start, length))
            }
            guard locations[id] == nil else { throw HEIFContainerError.malformed("item \(id) has two locations") }
            locations[id] = Location(constructionMethod: method, dataReferenceIndex: dataReference, extents: extents)
        }
    }

    private mutating func readProperties(_ body: Range<Int>, _ reader: HEIFBoxReader) throws(ImageError) {
        for box in try reader.boxes(in: body) {
            if box.type == "ipco" {
                for property in try reader.boxes(in: box.body) {
                    let keep = Self.readProperties.contains(property.type) && property.body.count <= 4096
                    properties.append(
                        Property(
                            type: property.type,
                            body: keep ? Array(UnsafeRawBufferPointer(rebasing: reader.bytes[property.body])) : []))
                }
            } else if box.type == "ipma" {
                var c = HEIFCursor(reader, box.body)
                let (version, flags) = try c.fullBoxHeader()
                let count = try c.u32()
                for _ in 0..<count {
                    let id = UInt32(version < 1 ? try c.u16() : try c.u32())
                    let associationCount = try c.u8()
                    var indices: [Int] = []
                    for _ in 0..<associationCount {
                        let index = flags & 1 != 0 ? (try c.u16()) & 0x7FFF : (try c.u8()) & 0x7F
                        if index != 0 { indices.append(index) }
                    }
                    associations[id, default: []].append(contentsOf: indices)
                }
            }
        }
    }

    // MARK: Reading what was parsed

    /// The properties of `item`, in association order.
    func properties(of item: UInt32) -> [Property] {
        (associations[item] ?? []).compactMap { $0 <= properties.count ? properties[$0 - 1] : nil }
    }

    /// The first property of `type` of `item`.
    func property(_ type: String, of item: UInt32) -> Property? {
        properties(of: item).first { $0.type == type }
    }

    /// The `ispe` size of `item`.
    func imageSize(of item: UInt32) -> PixelSize? {
        guard let body = property("ispe", of: item)?.body, body.count >= 12 else { return nil }
        func u32(_ at: Int) -> Int {
            Int(body[at]) << 24 | Int(body[at + 1]) << 16 | Int(body[at + 2]) << 8 | Int(body[at + 3])
        }
        return PixelSize(width: u32(4), height: u32(8))
    }

    /// The targets of `item`'s references of `type`.
    func references(_ type: String, from item: UInt32) -> [UInt32] { references[item]?[type] ?? [] }

    /// The items whose `auxl` reference points at `item` and whose `auxC` names an alpha plane.
    func alphaItems(of item: UInt32) -> [UInt32] {
        references.compactMap { from, types -> UInt32? in
            guard types["auxl"]?.contains(item) == true, let body = property("auxC", of: from)?.body,
                body.count > 4
            else { return nil }
            let urn = String(decoding: body[4...].prefix { $0 != 0 }, as: UTF8.self)
            return urn == "urn:mpeg:hevc:2015:auxid:1" || urn == "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha"
                ? from : nil
        }.sorted()
    }
}

extension HEIFItemGraph {
    /// Whether `item` has one colour channel: its `pixi`, else the decoder configuration of the first coded item
    /// it derives from (`hvcC` chroma_format_idc 0, `av1C` mono_chrome).
    func isMonochrome(_ item: UInt32) -> Bool {
        if let pixi = property("pixi", of: item)?.body, pixi.count >= 5 { return pixi[4] == 1 }
        var current = item
        for _ in 0...HEIFLimits.maxDerivationDepth {
            if let hvcC = property("hvcC", of: current)?.body, hvcC.count > 16 { return hvcC[16] & 3 == 0 }
            if let av1C = property("av1C", of: current)?.body, av1C.count > 2 { return av1C[2] & 0x10 != 0 }
            guard let next = references("dimg", from: current).first else { return false }
            current = next
        }
        return false
    }
}
