import Foundation
import ImageCore
import ImageTestSupport
import PropertyBased
import Testing

@testable import PNGCoder

/// The fast reader and encoder (libdeflate, SIMD row filters, no libpng) against libpng as the reference model:
/// every file the fast reader accepts decodes to exactly libpng's pixels, in full and as a thumbnail, inflated at
/// once or streamed; a file it must not judge (corrupt after its CRCs were fixed, odd gamma, tRNS, 16 bits, …) is
/// handed back to libpng, never decoded differently; and every encoder output is a PNG libpng decodes back to the
/// input. Failures print PropertyBased's seed (`.fixedSeed(...)`) and the case.
@Suite("PNG fast paths")
struct PNGFastPathTests {
    static let layouts: [PixelLayout] = [.gray8, .grayAlpha8, .rgb8, .rgba8]

    /// One random image and how it is written: a filter (0-4 on every row, 5 the per-row heuristic), a libdeflate
    /// level, or libpng's Adam7 writer.
    struct Case: CustomStringConvertible {
        var width: Int
        var height: Int
        var layout: PixelLayout
        var filter: Int
        var level: Int
        var interlaced: Bool
        /// Smooth gradients with noise (photo-like, every filter matters) or flat blocks (long runs).
        var smooth: Bool
        var seed: UInt64

        var description: String {
            "\(width)x\(height) \(layout) filter \(filter) level \(level)\(interlaced ? " Adam7" : "")"
                + " \(smooth ? "smooth" : "blocks") pixel seed \(seed)"
        }

        func pixels() -> PixelBuffer {
            var rng = SplitMix64(seed: seed)
            let channels = layout.bytesPerPixel
            var bytes = [UInt8](repeating: 0, count: width * height * channels)
            for y in 0..<height {
                for x in 0..<width {
                    for c in 0..<channels {
                        let noise = Int(rng.next() % 9) - 4
                        let value =
                            smooth
                            ? (x * 7 + y * 5 + c * 40) + noise
                            : ((x / 5 + y / 3 + c) % 3) * 100 + (rng.next() % 16 == 0 ? noise * 20 : 0)
                        bytes[(y * width + x) * channels + c] = UInt8(truncatingIfNeeded: value)
                    }
                }
            }
            return PixelBuffer(width: width, height: height, layout: layout, alphaMode: .straight, bytes: bytes)
        }

        func encoded() throws -> Data {
            let source = pixels()
            if interlaced {
                return Data(
                    try PNGEncoder.encodeWithLibpng(
                        source, iccProfile: [], options: ImageEncodeOptions(effort: .fast, progressive: true)))
            }
            return Data(try PNGEncoder.encodeFast(source, level: Int32(level), filter: Int32(filter)))
        }
    }

    static let cases = zip(
        zip(Gen.int(in: 1...70), Gen.int(in: 1...40), Gen.int(in: 0...3)),
        zip(Gen.int(in: 0...5), Gen.int(in: 0...12), Gen.int(in: 0...5), Gen.bool, Gen.uint64())
    ).map { all in
        let (geometry, coding) = all
        return Case(
            width: geometry.0, height: geometry.1, layout: layouts[geometry.2], filter: coding.0, level: coding.1,
            interlaced: coding.2 == 0, smooth: coding.3, seed: coding.4)
    }

    /// libpng's full decode: the reference.
    static func libpng(_ data: Data) throws -> PixelBuffer {
        let chunks = try PNGDecoder.header(of: data, scanAll: true)
        return try data.withUnsafeBytes { try PNGDecoder.decodePixels($0, chunks: chunks, rgba: false) }
    }

    /// The fast reader's full decode, inflated at once or streamed; nil when it hands the file to libpng.
    static func fast(_ data: Data, streamed: Bool) throws -> PixelBuffer? {
        try data.withUnsafeBytes { bytes -> PixelBuffer? in
            guard let reader = try PNGFastReader(bytes, maxPixels: .max, wholeInflateLimit: streamed ? 0 : .max)
            else { return nil }
            var out: [UInt8] = []
            let rowBytes = reader.width * reader.channels
            var row = 0
            while row < reader.height {
                let count = min(3, reader.height - row)
                guard let strip = try reader.read(count: count) else { return nil }
                for i in 0..<count {
                    out.append(contentsOf: UnsafeBufferPointer(start: strip.rows + i * strip.stride, count: rowBytes))
                }
                row += count
            }
            return PixelBuffer(
                width: reader.width, height: reader.height, layout: reader.layout, alphaMode: .straight, bytes: out)
        }
    }

    @Test("every generated 8-bit file takes the fast reader and decodes to libpng's pixels, whole and streamed")
    func fastReaderMatchesLibpng() async {
        await propertyCheck(count: 250, input: Self.cases) { c in
            let data = try c.encoded()
            let reference = try Self.libpng(data)
            let whole = try #require(try Self.fast(data, streamed: false), "not taken: \(c)")
            #expect(whole == reference, "\(c)")
            // Streaming needs rows in order: an interlaced image over the one-shot limit is libpng's.
            let streamed = try Self.fast(data, streamed: true)
            #expect(c.interlaced ? streamed == nil : streamed == reference, "\(c)")
            #expect(try PNGCoder.shared.decode(data, options: ImageDecodeOptions()).pixels == reference, "\(c)")
            // The thumbnail path: the same pixels, reduced.
            let target = PixelSize(width: max(1, c.width / 3), height: max(1, c.height / 2))
            let thumbnail = try #require(try PNGRowDecoder.decode(data, target: target, maxPixels: .max))
            #expect(thumbnail.1.fast, "\(c)")
            #expect(thumbnail.0 == reference.areaResampled(width: target.width, height: target.height), "\(c)")
        }
    }

    /// A valid file with bytes changed inside its chunks' data and the CRCs fixed, so the damage reaches the
    /// inflater and the row filters instead of stopping at a CRC.
    static func damaged(_ data: Data, edits: [(position: UInt64, value: UInt8)]) -> Data {
        var chunks: [(type: String, payload: [UInt8])] = []
        var offset = 8
        let bytes = [UInt8](data)
        while offset + 12 <= bytes.count {
            let length =
                Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            chunks.append((type, Array(bytes[offset + 8..<offset + 8 + length])))
            offset += 12 + length
        }
        let editable = chunks.indices.filter { chunks[$0].type != "IHDR" && !chunks[$0].payload.isEmpty }
        for edit in edits where !editable.isEmpty {
            let index = editable[Int(edit.position % UInt64(editable.count))]
            let at = Int((edit.position >> 16) % UInt64(chunks[index].payload.count))
            chunks[index].payload[at] = edit.value
        }
        var out = PNGChunks.signature
        for chunk in chunks {
            APNGFrameStream.appendChunk(chunk.type, to: &out) { $0.append(contentsOf: chunk.payload) }
        }
        return Data(out)
    }

    /// zlib's refusals of the symbols deflate reserves (distance codes 30-31, literal/length codes 286-287).
    static func isReservedCodeRefusal(_ error: any Error) -> Bool {
        let message = String(describing: (error as? ImageError)?.underlying ?? error)
        return ["invalid distance code", "invalid literal/length code", "too many length or distance symbols"].contains
        {
            message.contains($0)
        }
    }

    @Test("a damaged file (CRCs fixed) is decoded by the fast reader only to libpng's pixels, else left to libpng")
    func damagedFilesNeverDisagree() async {
        let edits = zip(Gen.uint64(), Gen.uint8()).array(of: 1...3).map { $0.map { (position: $0.0, value: $0.1) } }
        await propertyCheck(count: 400, input: Self.cases, edits, Gen.int(in: 0...2)) { c, edits, cut in
            var data = Self.damaged(try c.encoded(), edits: edits)
            if cut > 0 { data = data.prefix(max(8, data.count - cut * 7)) }  // and sometimes short
            let reference = Result { try Self.libpng(data) }
            for streamed in [false, true] {
                guard let pixels = try Self.fast(data, streamed: streamed) else { continue }
                switch reference {
                case .success(let expected):
                    #expect(pixels == expected, "\(c) edits \(edits) cut \(cut) streamed \(streamed)")
                case .failure(let error):
                    // The one documented difference: a stream using the codes deflate reserves, which zlib
                    // refuses and libdeflate reads, when its length and Adler-32 check (streamed is zlib's).
                    #expect(!streamed && Self.isReservedCodeRefusal(error), "\(c) edits \(edits) cut \(cut): \(error)")
                }
            }
            // Through the coder: pixels or a typed error, never a trap.
            do {
                _ = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
                _ = try PNGCoder.shared.decode(
                    data, options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 5, height: 5)))
            } catch {
                #expect(error is ImageError)
            }
        }
    }

    @Test("files the fast reader leaves to libpng: other depths and types, tRNS, PLTE, a gamma libpng corrects")
    func leavesLibpngsFilesToLibpng() throws {
        let (width, height) = (9, 6)
        func file(_ type: PNGFixtures.ColorType, depth: Int = 8, transparency: [UInt8]? = nil) -> Data {
            let samples = (0..<(width * height * type.channels)).map { UInt16($0 % (1 << min(depth, 8))) }
            let palette = type == .palette ? (0..<(3 << depth)).map { UInt8($0 & 255) } : nil
            return PNGFixtures.make(
                width: width, height: height, bitDepth: depth, colorType: type, samples: samples, palette: palette,
                transparency: transparency)
        }
        let plain = file(.rgb)
        #expect(try Self.fast(plain, streamed: false) != nil)
        let gamma = { (value: UInt32) -> Data in
            // gAMA right after IHDR: a file gamma libpng converts from unless it is within 5 % of sRGB's.
            var bytes = [UInt8](plain.prefix(33))
            APNGFrameStream.appendChunk("gAMA", to: &bytes) { out in
                out.append(contentsOf: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) })
            }
            return Data(bytes + plain.dropFirst(33))
        }
        #expect(try Self.fast(gamma(45455), streamed: false) == Self.libpng(gamma(45455)))
        let leftToLibpng: [(String, Data)] = [
            ("16-bit", file(.rgb, depth: 16)), ("4-bit gray", file(.gray, depth: 4)), ("palette", file(.palette)),
            ("tRNS", file(.rgb, transparency: [0, 1, 0, 2, 0, 3])), ("gamma 1.0", gamma(100_000)),
            ("gamma 0.7", gamma(70_000)),
        ]
        for (label, data) in leftToLibpng {
            #expect(try Self.fast(data, streamed: false) == nil, "\(label)")
            // …and the coder still decodes it (through libpng).
            #expect(try PNGCoder.shared.decode(data, options: ImageDecodeOptions()).pixels == Self.libpng(data))
        }
    }

    @Test(
        "every corpus PNG the fast reader takes (gamma, iCCP, sRGB, Adam7, odd chunks) decodes to libpng's pixels",
        .enabled(if: Corpus.shouldRun, "needs the conformance corpus"))
    func corpusMatchesLibpng() throws {
        let rows = try ["png/pngsuite", "png/libpng", "png/misc", "hostile/png", "hostile/truncated"].flatMap {
            try Corpus.requireExpectations(under: $0, extensions: ["png"])
        }
        var taken = 0
        for row in rows {
            let data = try Data(contentsOf: row.url)
            guard let fast = try? Self.fast(data, streamed: false) else { continue }
            taken += 1
            #expect(fast == (try? Self.libpng(data)), "\(row)")
            let interlaced = (try? PNGDecoder.header(of: data, scanAll: false))?.interlaced ?? false
            #expect(try Self.fast(data, streamed: true) == (interlaced ? nil : fast), "\(row)")
        }
        #expect(taken >= 40, "only \(taken) corpus files took the fast reader")
    }

    @Test("the encoder writes what libpng reads back, for every layout, filter and level")
    func encoderRoundTripsThroughLibpng() async {
        await propertyCheck(count: 200, input: Self.cases) { c in
            var plain = c
            plain.interlaced = false
            let source = plain.pixels()
            let data = try plain.encoded()
            let decoded = try Self.libpng(data)
            let expected =
                source.layout == .grayAlpha8
                ? PixelBuffer(
                    width: source.width, height: source.height, layout: .rgba8, alphaMode: .straight,
                    bytes: stride(from: 0, to: source.bytes.count, by: 2).flatMap { i in
                        [source.bytes[i], source.bytes[i], source.bytes[i], source.bytes[i + 1]]
                    })
                : source
            #expect(decoded == expected, "\(plain)")
            // The IHDR says 8-bit, not interlaced, and the colour type of the layout.
            let colorType: UInt8 = [PixelLayout.gray8: 0, .grayAlpha8: 4, .rgb8: 2, .rgba8: 6][source.layout] ?? 99
            #expect(data[24] == 8 && data[25] == colorType && data[28] == 0, "\(plain)")
        }
    }

    @Test("balanced picks the level by content: flat colour at level 9, smooth areas with noise at 6, noise at 1")
    func balancedPicksTheLevelByContent() throws {
        let flat = Case(
            width: 300, height: 200, layout: .rgb8, filter: 5, level: 0, interlaced: false, smooth: false, seed: 7)
        var noisy = flat
        noisy.smooth = true
        for (pixels, level) in [(flat.pixels(), 9), (Self.twoThirdsRepeated(), 6), (noisy.pixels(), 1)] {
            let balanced = try PNGCoder.shared.encode(Image(pixels: pixels), as: .png, options: ImageEncodeOptions())
            let outputs = try [1, 6, 9].map { try PNGEncoder.encodeFast(pixels, level: Int32($0), filter: 5) }
            #expect(Set(outputs).count == 3, "the three levels must differ for the check to mean anything")
            #expect(Array(balanced) == outputs[[1: 0, 6: 1, 9: 2][level]!], "expected level \(level)")
        }
    }

    /// Noise where two pixels of every three repeat their left neighbour: about two thirds of the bytes filter to
    /// zero (Sub), the band where level 9 crawls and `.balanced` picks 6.
    static func twoThirdsRepeated() -> PixelBuffer {
        var generator = SplitMix64(seed: 11)
        var bytes = [UInt8](repeating: 0, count: 240 * 160 * 3)
        for pixel in 0..<(240 * 160) {
            for channel in 0..<3 {
                bytes[pixel * 3 + channel] =
                    pixel % 3 == 0 ? UInt8(truncatingIfNeeded: generator.next()) : bytes[pixel * 3 + channel - 3]
            }
        }
        return PixelBuffer(width: 240, height: 160, layout: .rgb8, alphaMode: .straight, bytes: bytes)
    }
}
