import Foundation
import ImageCore
import ImageTransformers
import PropertyBased
import Testing

/// BlurHash and ThumbHash through the public API, against the reference implementations' output
/// (``PlaceholderFixtures``, computed once by scripts/placeholder-fixtures.py from PyPI's `blurhash` 1.1.5 and
/// `thumbhash` 0.1.2 on ``PlaceholderImages``): exact equality, strings and bytes.
@Suite("Placeholders")
struct PlaceholderTests {
    @Test("BlurHash equals the reference's string for every fixture image and component count")
    func blurHashMatchesReference() throws {
        for fixture in PlaceholderFixtures.blurHashes {
            let hash = try BlurHash.encode(
                PlaceholderImages.buffer(fixture.image), componentsX: fixture.x, componentsY: fixture.y)
            #expect(hash == fixture.hash, "\(fixture.image) \(fixture.x)x\(fixture.y)")
        }
    }

    @Test("BlurHash decoding equals the reference's pixels")
    func blurHashDecodeMatchesReference() throws {
        let fixture = PlaceholderFixtures.blurHashDecoded
        let pixels = try BlurHash.decode(fixture.hash, width: fixture.width, height: fixture.height)
        #expect(pixels.layout == .rgb8)
        #expect(hex(pixels.bytes) == fixture.rgbHex)
    }

    @Test("ThumbHash equals the reference's bytes, opaque and with alpha")
    func thumbHashMatchesReference() throws {
        for fixture in PlaceholderFixtures.thumbHashes {
            let hash = try ThumbHash.encode(PlaceholderImages.buffer(fixture.image))
            #expect(hex(hash) == fixture.hex, "\(fixture.image)")
        }
    }

    @Test("an image is reduced with ImageCore's area average to the documented box before hashing")
    func imagesAreReducedFirst() throws {
        var random = Fixtures.Random(seed: 35)
        let large = Fixtures.buffer(width: 300, height: 200, layout: .rgb8) { x, y in
            [UInt8(x % 256), UInt8(y), random.byte()]
        }
        let image = Image(pixels: large)
        #expect(
            try image.blurHash()
                == BlurHash.encode(large.areaResampled(width: 32, height: 21), componentsX: 4, componentsY: 3))
        #expect(
            try image.thumbHash()
                == Data(ThumbHash.encode(large.areaResampled(width: 100, height: 67))).base64EncodedString())
        // Small images are hashed as they are.
        let small = PlaceholderImages.buffer("rings")
        #expect(try Image(pixels: small).blurHash() == BlurHash.encode(small.areaResampled(width: 32, height: 20)))
        #expect(try ThumbHash.encode(Image(pixels: small)) == ThumbHash.encode(small))
    }

    @Test("bad input is a typed error")
    func badInput() throws {
        let pixels = PlaceholderImages.buffer("gradient")
        for (x, y) in [(0, 3), (4, 10), (10, 1)] {
            #expect(throws: ImageError.self) { try BlurHash.encode(pixels, componentsX: x, componentsY: y) }
        }
        let empty = PixelBuffer(width: 0, height: 0, layout: .rgba8)
        #expect(throws: ImageError.self) { try BlurHash.encode(empty) }
        #expect(throws: ImageError.self) { try ThumbHash.encode(empty) }
        #expect(throws: ImageError.self) { try Image(pixels: empty).thumbHash() }
        #expect(throws: ImageError.self) {
            try ThumbHash.encode(PixelBuffer(width: 101, height: 4, layout: .rgb8))
        }
        for hash in ["", "LKO2?U", "L$Hew62kwzX5l@WFjue;gKfkfQf", "L$Hew62kwzX5l@WFjue;gKfkfQf\u{e9}"] {
            #expect(throws: ImageError.self, "\(hash)") { try BlurHash.decode(hash, width: 8, height: 8) }
        }
        #expect(throws: ImageError.self) { try BlurHash.decode("00Hew6", width: 0, height: 8) }
        let good = try ThumbHash.encode(PlaceholderImages.buffer("fade"))
        for short in [[], Array(good.prefix(4)), Array(good.prefix(8))] {
            #expect(throws: ImageError.self, "\(short)") { try ThumbHash.decode(short) }
        }
    }

    static let flats = zip(Gen.int(in: 1...40), Gen.int(in: 1...40), Gen.uint64())

    /// The DC term is the mean colour in linear light, written as an 8-bit sRGB triple, so a flat colour comes back
    /// exactly, whatever the component count (the reference's AC basis, cos(π·i·x / width), does not sum to zero
    /// over a row for odd i, so the other components of a flat image are not all zero: only the DC is checked,
    /// and a 1×1-component hash, which is only its DC, decodes to the colour exactly).
    @Test("BlurHash of a flat opaque colour carries exactly that colour as its DC term")
    func blurHashFlatDC() async {
        await propertyCheck(count: 60, input: Self.flats) { width, height, seed in
            var random = Fixtures.Random(seed: seed)
            let colour = [random.byte(), random.byte(), random.byte()]
            let flat = Fixtures.buffer(width: width, height: height, layout: .rgb8) { _, _ in colour }
            let dcOnly = try BlurHash.encode(flat, componentsX: 1, componentsY: 1)
            let hash = try BlurHash.encode(flat, componentsX: 1 + Int(seed % 9), componentsY: 1 + Int(seed / 9 % 9))
            #expect(hash.dropFirst(2).prefix(4) == dcOnly.dropFirst(2).prefix(4), "\(hash) \(dcOnly)")
            let decoded = try BlurHash.decode(dcOnly, width: 1 + width % 7, height: 1 + height % 5)
            for y in 0..<decoded.height {
                for x in 0..<decoded.width {
                    #expect(Array(decoded.pixel(x: x, y: y)) == colour, "\(dcOnly) \(colour)")
                }
            }
        }
    }

    /// Flat images of at least 4 pixels a side: below that the format's 7 cosine components alias (cx cycles over
    /// w pixels sum to zero only for cx < 2w) and a flat image has AC terms.
    static let flatsOfFourOrMore = zip(Gen.int(in: 4...40), Gen.int(in: 4...40), Gen.uint64())

    /// A flat colour's ThumbHash keeps only its DC terms: L in 6 bits (±2.0 levels) and P, Q in 6 bits over
    /// -1...1 (±0.0159 each), which reach R and G through l + p/3 ± q/2 (±5.4 levels) and B through l − 2p/3
    /// (±4.7), plus the reference's truncation to bytes (1): 7 levels at most. The aspect ratio keeps the rounded
    /// ratio of 7-component axes.
    @Test("ThumbHash of a flat opaque colour decodes within 7 levels of it, with its rough aspect ratio")
    func thumbHashFlatRoundTrip() async {
        await propertyCheck(count: 60, input: Self.flatsOfFourOrMore) { width, height, seed in
            var random = Fixtures.Random(seed: seed)
            let colour = [random.byte(), random.byte(), random.byte()]
            let flat = Fixtures.buffer(width: width, height: height, layout: .rgb8) { _, _ in colour }
            let hash = try ThumbHash.encode(flat)
            let decoded = try ThumbHash.decode(hash)
            var worst = 0
            for y in 0..<decoded.height {
                for x in 0..<decoded.width {
                    let pixel = Array(decoded.pixel(x: x, y: y))
                    #expect(pixel[3] == 255)
                    for c in 0..<3 { worst = max(worst, abs(Int(pixel[c]) - Int(colour[c]))) }
                }
            }
            #expect(worst <= 7, "\(width)x\(height) \(colour): off by \(worst)")
            let ratio = try ThumbHash.aspectRatio(of: hash)
            let longer = Double(max(width, height))
            let expected =
                max(1, (7 * Double(width) / longer).rounded()) / max(1, (7 * Double(height) / longer).rounded())
            #expect(abs(ratio - expected) < 1e-9, "\(width)x\(height)")
        }
    }

    private func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
