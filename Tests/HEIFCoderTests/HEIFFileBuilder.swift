import Foundation
import HEIFCoder
import ImageCore

/// Builds HEIF files box by box, so tests can make the item graphs libheif 1.15 mishandles: cycles, grids with
/// missing or miscounted tiles, bad indices, odd sizes. Coded items reuse one real HEVC tile (hvcC + bitstream)
/// taken from a file the coder itself encoded.
struct HEIFFileBuilder {
    struct Item {
        var id: UInt32
        var type: String
        var data: [UInt8]?
        var properties: [[UInt8]]
    }

    var majorBrand = "heic"
    var brands = ["mif1", "heic"]
    var primary: UInt32? = 1
    var items: [Item] = []
    var references: [(type: String, from: UInt32, to: [UInt32])] = []
    /// Extra `ipma` entries (item, 1-based property index) added after the items' own.
    var extraAssociations: [(UInt32, Int)] = []

    // MARK: Boxes

    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
        be32(UInt32(body.count + 8)) + Array(type.utf8) + body
    }

    static func fullBox(_ type: String, version: UInt8 = 0, flags: UInt32 = 0, _ body: [UInt8]) -> [UInt8] {
        box(type, [version] + Array(be32(flags).suffix(3)) + body)
    }

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func be32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }

    static func ispe(_ width: Int, _ height: Int) -> [UInt8] {
        fullBox("ispe", be32(UInt32(width)) + be32(UInt32(height)))
    }

    static func irot(_ quarterTurns: UInt8) -> [UInt8] { box("irot", [quarterTurns & 3]) }

    static func clap(_ values: [UInt32]) -> [UInt8] { box("clap", values.flatMap(be32)) }

    /// A grid descriptor (16-bit output size).
    static func gridDescriptor(rows: Int, columns: Int, width: Int, height: Int) -> [UInt8] {
        [0, 0, UInt8(rows - 1), UInt8(columns - 1)] + be16(UInt16(width)) + be16(UInt16(height))
    }

    // MARK: The file

    func build() -> Data {
        let ftyp = Self.box("ftyp", Array(majorBrand.utf8) + Self.be32(0) + brands.flatMap { Array($0.utf8) })
        var properties: [[UInt8]] = []
        var associations: [(UInt32, [Int])] = []
        for item in items {
            var indices: [Int] = []
            for property in item.properties {
                if let existing = properties.firstIndex(of: property) {
                    indices.append(existing + 1)
                } else {
                    properties.append(property)
                    indices.append(properties.count)
                }
            }
            associations.append((item.id, indices))
        }
        for (item, index) in extraAssociations { associations.append((item, [index])) }
        let hdlr = Self.fullBox("hdlr", Self.be32(0) + Array("pict".utf8) + [UInt8](repeating: 0, count: 13))
        let pitm = primary.map { Self.fullBox("pitm", Self.be16(UInt16($0))) } ?? []
        let infes = items.map {
            Self.fullBox("infe", version: 2, Self.be16(UInt16($0.id)) + Self.be16(0) + Array($0.type.utf8) + [0])
        }
        let iinf = Self.fullBox("iinf", Self.be16(UInt16(items.count)) + infes.flatMap { $0 })
        let iref =
            references.isEmpty
            ? []
            : Self.fullBox(
                "iref",
                references.flatMap {
                    Self.box(
                        $0.type,
                        Self.be16(UInt16($0.from)) + Self.be16(UInt16($0.to.count))
                            + $0.to.flatMap { Self.be16(UInt16($0)) })
                })
        let ipco = Self.box("ipco", properties.flatMap { $0 })
        var ipmaBody = Self.be32(UInt32(associations.count))
        for (item, indices) in associations {
            ipmaBody += Self.be16(UInt16(item)) + [UInt8(indices.count)] + indices.map { UInt8($0 & 0x7F) }
        }
        let iprp = Self.box("iprp", ipco + Self.fullBox("ipma", ipmaBody))
        // iloc v1: 4-byte offsets and lengths, no base offset; offsets patched once the meta size is known.
        let located = items.filter { $0.data != nil }
        func iloc(mdatStart: Int) -> [UInt8] {
            var body = [0x44, 0x00] + Self.be16(UInt16(located.count))
            var offset = mdatStart
            for item in located {
                body += Self.be16(UInt16(item.id)) + Self.be16(0) + Self.be16(0) + Self.be16(1)
                body += Self.be32(UInt32(offset)) + Self.be32(UInt32(item.data!.count))
                offset += item.data!.count
            }
            return Self.fullBox("iloc", version: 1, body)
        }
        let metaWithout = hdlr + pitm + iinf + iref + iprp
        let metaSize = 12 + metaWithout.count + iloc(mdatStart: 0).count
        let mdatStart = ftyp.count + metaSize + 8
        let meta = Self.fullBox("meta", metaWithout + iloc(mdatStart: mdatStart))
        let mdat = Self.box("mdat", located.flatMap { $0.data! })
        return Data(ftyp + meta + mdat)
    }
}

/// One real HEVC-coded tile: its `hvcC` property box and its bitstream.
struct HEVCTile {
    let hvcC: [UInt8]
    let bitstream: [UInt8]
    let width: Int
    let height: Int

    /// A 64x64 gradient encoded by `HEIFCoder`, taken apart with the coder's own container reader.
    static let gradient: HEVCTile = {
        var bytes = [UInt8](repeating: 0, count: 64 * 64 * 3)
        for y in 0..<64 {
            for x in 0..<64 {
                bytes[(y * 64 + x) * 3] = UInt8(x * 4)
                bytes[(y * 64 + x) * 3 + 1] = UInt8(y * 4)
                bytes[(y * 64 + x) * 3 + 2] = 100
            }
        }
        let image = Image(pixels: PixelBuffer(width: 64, height: 64, layout: .rgb8, bytes: bytes))
        let file = try! HEIFCoder.shared.encode(image, as: .heic, options: ImageEncodeOptions(quality: 0.9))
        return HEVCTile.extract(from: [UInt8](file))
    }()

    /// Finds the `hvcC` box and the single `mdat` payload of a one-item file written by libheif.
    static func extract(from file: [UInt8]) -> HEVCTile {
        func find(_ type: String, in range: Range<Int>) -> Range<Int>? {
            let name = Array(type.utf8)
            var i = range.lowerBound
            while i + 8 <= range.upperBound {
                if Array(file[i + 4..<i + 8]) == name {
                    let size = Int(file[i]) << 24 | Int(file[i + 1]) << 16 | Int(file[i + 2]) << 8 | Int(file[i + 3])
                    return i..<(i + size)
                }
                i += 1
            }
            return nil
        }
        let hvcC = find("hvcC", in: 0..<file.count)!
        let mdat = find("mdat", in: 0..<file.count)!
        return HEVCTile(
            hvcC: Array(file[hvcC]), bitstream: Array(file[(mdat.lowerBound + 8)..<mdat.upperBound]), width: 64,
            height: 64)
    }

    /// A coded item of this tile.
    func item(_ id: UInt32, extra: [[UInt8]] = []) -> HEIFFileBuilder.Item {
        HEIFFileBuilder.Item(
            id: id, type: "hvc1", data: bitstream,
            properties: [hvcC, HEIFFileBuilder.ispe(width, height)] + extra)
    }
}
