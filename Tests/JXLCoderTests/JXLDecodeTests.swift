import CJXL
import Foundation
import ImageCore
import ImageTestSupport
import JXLCoder
import Testing

/// Decoding through the public API, on files libjxl's own encoder writes (``JXLTestFiles``): every sample type
/// and channel count to the SDK's 8-bit layouts, orientation, colour profile, probe.
@Suite struct JXLDecodeTests {
    static func decode(_ data: Data, _ options: ImageDecodeOptions = ImageDecodeOptions()) throws -> Image {
        try JXLCoder.shared.decode(data, options: options)
    }

    /// The pattern's expected 8-bit samples in the layout the coder picks for `channels`.
    static func expected(_ spec: JXLTestFiles.Spec) -> [UInt8] {
        JXLTestFiles.pattern(width: spec.width, height: spec.height, channels: spec.channels).map(JXLTestFiles.eight)
    }

    @Test(arguments: [1, 2, 3, 4], [JXLTestFiles.Samples.uint8, .uint16, .float])
    func everySampleTypeDecodesToEightBits(channels: Int, samples: JXLTestFiles.Samples) throws {
        var spec = JXLTestFiles.Spec()
        spec.channels = channels
        spec.samples = samples
        spec.bitsPerSample = samples == .uint8 ? 8 : samples == .uint16 ? 16 : 32
        let image = try Self.decode(JXLTestFiles.make(spec))
        let layouts: [PixelLayout] = [.gray8, .grayAlpha8, .rgb8, .rgba8]
        #expect(image.pixels.layout == layouts[channels - 1])
        #expect(image.pixels.alphaMode == (channels % 2 == 0 ? .straight : .none))
        #expect(image.width == spec.width && image.height == spec.height)
        let expected = Self.expected(spec)
        let difference = zip(image.pixels.bytes, expected).map { abs(Int($0) - Int($1)) }.max() ?? 0
        // 8-bit lossless is exact; 16-bit and float samples are rounded once to 8 bits.
        #expect(difference <= (samples == .uint8 ? 0 : 1), "max difference \(difference)")
        #expect(image.metadata.iccProfile == nil, "sRGB pixels need no profile")
        #expect(image.format == .jxl && image.frameCount == 1)
    }

    @Test func orientationIsAppliedByDefaultAndReportedWhenKeptRaw() throws {
        for orientation in ImageOrientation.allCases {
            var spec = JXLTestFiles.Spec()
            spec.orientation = orientation.rawValue
            let data = JXLTestFiles.make(spec)
            let raw = try Self.decode(data, ImageDecodeOptions(applyOrientation: false))
            #expect(raw.width == 48 && raw.height == 32)
            #expect(raw.metadata.orientation == orientation)
            #expect(raw.pixels.bytes == Self.expected(spec), "the stored pixels")
            let shown = try Self.decode(data)
            #expect(shown.metadata.orientation == .up)
            #expect(shown.metadata.sourceOrientation == orientation)
            #expect(shown.pixels == raw.pixels.oriented(orientation), "\(orientation)")
            #expect(JXLCoder.shared.probe(data)?.width == 48, "the probe reports the stored size")
        }
    }

    @Test func wideGamutPixelsCarryTheirProfile() throws {
        var spec = JXLTestFiles.Spec()
        spec.primaries = JXL_PRIMARIES_P3
        let image = try Self.decode(JXLTestFiles.make(spec))
        let profile = try #require(image.metadata.iccProfile)
        #expect(profile.count > 128)
        #expect(Array(profile[36..<40]) == Array("acsp".utf8))
        // Written back, the profile survives a lossless round trip.
        let encoded = try JXLCoder.shared.encode(image, as: .jxl, options: ImageEncodeOptions(lossless: true))
        let again = try Self.decode(encoded)
        #expect(again.metadata.iccProfile == profile)
        #expect(again.pixels == image.pixels)
        // Lossy (XYB) files in P3 decode to P3 pixels with the profile.
        spec.lossless = false
        #expect(try Self.decode(JXLTestFiles.make(spec)).metadata.iccProfile != nil)
    }

    @Test func lossySRGBFilesDecodeCloseToTheSource() throws {
        var spec = JXLTestFiles.Spec()
        spec.lossless = false
        spec.distance = 0.5
        spec.channels = 3
        let image = try Self.decode(JXLTestFiles.make(spec))
        let expected = Self.expected(spec)
        var total = 0
        for (got, want) in zip(image.pixels.bytes, expected) { total += abs(Int(got) - Int(want)) }
        let mean = Double(total) / Double(expected.count)
        #expect(mean < 2, "mean absolute error \(mean)")
        #expect(image.metadata.iccProfile == nil)
    }

    @Test func containersAndBareCodestreamsAreTheSameImage() throws {
        var spec = JXLTestFiles.Spec()
        let bare = JXLTestFiles.make(spec)
        spec.container = true
        let boxed = JXLTestFiles.make(spec)
        #expect(ImageFormat.detect(bare) == .jxl)
        #expect(ImageFormat.detect(boxed) == .jxl)
        #expect(JXLCoder.shared.canDecode(bare) && JXLCoder.shared.canDecode(boxed))
        #expect(Array(boxed.prefix(12)) == [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A])
        #expect(try Self.decode(bare).pixels == Self.decode(boxed).pixels)
        #expect(JXLCoder.shared.probe(boxed) == JXLCoder.shared.probe(bare))
    }

    /// A container's `Exif` box (here after the codestream box) becomes the image's EXIF, from the TIFF header on.
    @Test func theExifBoxIsCarriedInTheMetadata() throws {
        let codestream = [UInt8](JXLTestFiles.make(JXLTestFiles.Spec()))
        let tiff: [UInt8] = [0x4D, 0x4D, 0, 0x2A, 0, 0, 0, 8, 0, 0]
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + payload.count)
            return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
                + Array(type.utf8) + payload
        }
        var file: [UInt8] = [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]
        file += box("ftyp", Array("jxl ".utf8) + [0, 0, 0, 0] + Array("jxl ".utf8))
        file += box("jxlc", codestream)
        file += box("Exif", [0, 0, 0, 2, 0xAA, 0xBB] + tiff)  // a 2-byte gap before the TIFF header
        let image = try Self.decode(Data(file))
        #expect(image.metadata.exif == tiff)
        #expect(image.pixels == (try Self.decode(Data(codestream))).pixels)
    }

    /// The size header the coder reads itself agrees with libjxl for random sizes (every ratio and distribution).
    @Test func theProbedSizeIsTheDecodedSize() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["JXL_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        print("JXLDecodeTests.theProbedSizeIsTheDecodedSize seed \(seed) (rerun with JXL_SEED=\(seed))")
        var generator = SeededGenerator(seed: seed)
        var sizes = [(8, 8), (256, 256), (120, 100), (160, 90), (100, 75), (150, 100), (125, 100), (200, 100)]
        for _ in 0..<16 {
            sizes.append((Int(generator.next() % 600) + 1, Int(generator.next() % 600) + 1))
        }
        for (width, height) in sizes {
            var spec = JXLTestFiles.Spec()
            spec.width = width
            spec.height = height
            spec.channels = 1
            spec.container = width % 2 == 0
            let data = JXLTestFiles.make(spec)
            let probed = try #require(JXLCoder.shared.probe(data), "seed \(seed), \(width)x\(height)")
            #expect(probed.width == width && probed.height == height, "seed \(seed)")
            #expect(probed.frameCount == 1)
            #expect(try Self.decode(data).width == width)
        }
    }

    @Test func thumbnailsAndScaleDownAreaAverage() throws {
        let data = JXLTestFiles.make(JXLTestFiles.Spec())
        let thumbnail = try Self.decode(data, ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 12, height: 12)))
        #expect(thumbnail.width == 12 && thumbnail.height == 8)
        #expect(thumbnail.metadata.sourcePixelWidth == 48)
        let scaled = try Self.decode(data, ImageDecodeOptions(scaleDownLimitBytes: 24 * 16 * 4))
        #expect(scaled.width == 24 && scaled.height == 16)
    }

    @Test func theCoderIsFoundByTheRegistry() throws {
        let coders = CodersManager(coders: [JXLCoder.shared])
        let data = JXLTestFiles.make(JXLTestFiles.Spec())
        #expect(try CodersManager.decode(data, with: coders, options: ImageDecodeOptions()).width == 48)
        #expect(coders.canEncode(to: .jxl))
        #expect(!JXLCoder.shared.canEncode(to: .png))
        #expect(JXLCoder.libraryVersion.hasPrefix("0."))
    }
}

/// SplitMix64, so a failing random case reproduces from its printed seed.
struct SeededGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
