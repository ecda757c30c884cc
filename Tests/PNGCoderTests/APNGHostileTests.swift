import Foundation
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// Damaged and hostile APNGs: each fails with a typed error (or, where the `acTL` must be ignored, decodes as the
/// still default image), for a full decode, a first-frame decode, an on-demand decode and the animation provider.
@Suite struct APNGHostileTests {
    static let red: [UInt8] = [255, 0, 0, 255]
    static let blue: [UInt8] = [0, 0, 255, 255]

    /// A valid 3-frame 4x4 animation whose default image (blue) is not part of it.
    static func chunks() -> [APNGFixtures.Chunk] {
        let frames = [
            APNGFixtures.Frame.solid(red, width: 4, height: 4), .solid(blue, x: 1, y: 1, width: 2, height: 2),
            .solid(red, x: 0, y: 0, width: 1, height: 1),
        ]
        return APNGFixtures.chunks(
            width: 4, height: 4, frames: frames, defaultImage: [UInt8](Array(repeating: blue, count: 16).joined()))
    }

    /// Index of the `n`-th chunk of `type`.
    static func index(_ chunks: [APNGFixtures.Chunk], _ type: String, _ n: Int = 0) -> Int {
        chunks.indices.filter { chunks[$0].type == type }[n]
    }

    /// Every way of reading `data` fails with `code`.
    static func expectFailure(_ data: Data, _ code: ImageError.Code, _ label: String) {
        for options in [
            ImageDecodeOptions(preloadAllFrames: true), ImageDecodeOptions(),
        ] {
            do {
                let image = try PNGCoder.shared.decode(data, options: options)
                for index in 0..<image.frameCount { _ = try image.frame(at: index) }
                Issue.record("\(label): decoded \(image)")
            } catch let error as ImageError {
                #expect(error.code == code, "\(label): \(error)")
                #expect(error.stage == .decode, "\(label)")
            } catch {
                Issue.record("\(label): not an ImageError: \(error)")
            }
        }
        #expect(throws: ImageError.self, "\(label)") {
            _ = try PNGCoder.shared.makeAnimatedProvider(for: data, options: ImageDecodeOptions())
        }
    }

    @Test func theFixtureItselfIsValid() throws {
        let image = try PNGCoder.shared.decode(APNGFixtures.file(Self.chunks()), options: ImageDecodeOptions())
        #expect(image.frameCount == 3)
    }

    @Test func sequenceNumberErrorsAreDamage() {
        var gap = Self.chunks()
        gap[Self.index(gap, "fdAT", 0)].payload[3] += 1
        Self.expectFailure(APNGFixtures.file(gap), .badImageData, "gap in the sequence")

        var start = Self.chunks()
        start[Self.index(start, "fcTL", 0)].payload[3] = 1
        Self.expectFailure(APNGFixtures.file(start), .badImageData, "sequence starting at 1")

        var reordered = Self.chunks()
        let a = Self.index(reordered, "fdAT", 0)
        let b = Self.index(reordered, "fcTL", 2)
        reordered.swapAt(a, b)
        Self.expectFailure(APNGFixtures.file(reordered), .badImageData, "chunks out of order")
    }

    @Test func fdATBeforeAnyFCTLIsDamage() {
        var chunks = Self.chunks()
        let fdAT = chunks.remove(at: Self.index(chunks, "fdAT", 0))
        chunks.insert(fdAT, at: Self.index(chunks, "fcTL", 0))
        Self.expectFailure(APNGFixtures.file(chunks), .badImageData, "fdAT before fcTL")
    }

    @Test func fcTLWithoutFrameDataIsDamage() {
        var chunks = Self.chunks()
        chunks.remove(at: Self.index(chunks, "fdAT", 1))
        // Renumber so only the missing data is wrong.
        var sequence: UInt32 = 0
        for i in chunks.indices where chunks[i].type == "fcTL" || chunks[i].type == "fdAT" {
            let bytes = withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
            chunks[i].payload.replaceSubrange(0..<4, with: bytes)
            sequence += 1
        }
        Self.expectFailure(APNGFixtures.file(chunks), .badImageData, "fcTL without fdAT")
    }

    @Test func framesOutsideTheCanvasOrEmptyAreDamage() {
        func withFrame(_ change: (inout [UInt8]) -> Void) -> Data {
            var chunks = Self.chunks()
            change(&chunks[Self.index(chunks, "fcTL", 1)].payload)
            return APNGFixtures.file(chunks)
        }
        func put(_ value: UInt32, at offset: Int, in payload: inout [UInt8]) {
            payload.replaceSubrange(offset..<offset + 4, with: withUnsafeBytes(of: value.bigEndian) { Array($0) })
        }
        Self.expectFailure(withFrame { put(3, at: 12, in: &$0) }, .badImageData, "x + width past the canvas")
        Self.expectFailure(withFrame { put(1_000_000, at: 8, in: &$0) }, .badImageData, "height 1,000,000")
        Self.expectFailure(withFrame { put(0xFFFF_FFFE, at: 16, in: &$0) }, .badImageData, "y offset overflow")
        Self.expectFailure(withFrame { put(0, at: 4, in: &$0) }, .badImageData, "zero width")
        Self.expectFailure(withFrame { $0[24] = 3 }, .badImageData, "dispose op 3")
        Self.expectFailure(withFrame { $0[25] = 2 }, .badImageData, "blend op 2")
        Self.expectFailure(withFrame { $0.removeLast(6) }, .badImageData, "fcTL of 20 bytes")
    }

    @Test func aDefaultImageFCTLThatDoesNotCoverTheCanvasIsDamage() {
        let frames = [APNGFixtures.Frame.solid(Self.red, width: 4, height: 4)]
        var chunks = APNGFixtures.chunks(width: 4, height: 4, frames: frames)
        chunks[Self.index(chunks, "fcTL", 0)].payload[11] = 2  // height 2 on a 4-high canvas
        Self.expectFailure(APNGFixtures.file(chunks), .badImageData, "default image fcTL 4x2")
    }

    @Test func fewerFramesThanDeclaredIsDamageAndMoreAreIgnored() throws {
        var more = Self.chunks()
        more[Self.index(more, "acTL")].payload[3] = 4
        Self.expectFailure(APNGFixtures.file(more), .badImageData, "acTL declares 4, the file holds 3")

        var fewer = Self.chunks()
        fewer[Self.index(fewer, "acTL")].payload[3] = 2
        let image = try PNGCoder.shared.decode(APNGFixtures.file(fewer), options: ImageDecodeOptions())
        #expect(image.frameCount == 2, "frames past num_frames are not shown")
        #expect(PNGCoder.shared.probe(APNGFixtures.file(fewer))?.frameCount == 2)
    }

    @Test func truncatedAnimationsFailAtEveryCut() throws {
        let data = APNGFixtures.file(Self.chunks())
        let firstIDAT = data.range(of: Data("IDAT".utf8))!.lowerBound
        // From the first IDAT on, a cut leaves a chunk short, or the last frame (or IEND) missing.
        for cut in stride(from: firstIDAT, to: data.count - 12, by: 7) {
            do {
                let image = try PNGCoder.shared.decode(
                    data.prefix(cut), options: ImageDecodeOptions(preloadAllFrames: true))
                Issue.record("cut at \(cut) decoded \(image)")
            } catch let error as ImageError {
                #expect(error.code == .badImageData, "cut at \(cut): \(error)")
            }
        }
        // Cut right after acTL: an animation with no image data at all.
        let afterACTL = data.range(of: Data("acTL".utf8))!.upperBound + 12
        Self.expectFailure(data.prefix(afterACTL), .badImageData, "truncated after acTL")
    }

    @Test func anFDATThatClaimsTwoGigabytesIsRefusedWithoutAllocating() {
        var data = APNGFixtures.file(Self.chunks())
        let fdAT = data.range(of: Data("fdAT".utf8))!.lowerBound - 4
        data.replaceSubrange(fdAT..<fdAT + 4, with: [0x7F, 0xFF, 0xFF, 0xF0])
        Self.expectFailure(data, .badImageData, "fdAT length 2 GiB")
    }

    @Test func corruptFrameDataFailsWhenThatFrameIsDecoded() throws {
        var chunks = Self.chunks()
        let i = Self.index(chunks, "fdAT", 2)
        chunks[i].payload.replaceSubrange(4..<chunks[i].payload.count, with: [0x78, 0x01, 0xFF, 0xFF, 0xFF])
        let data = APNGFixtures.file(chunks)
        // The frame index is fine, so the first frame decodes and the provider reports the damage at frame 2; the
        // compositor then starts over for frame 1.
        let image = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
        #expect(throws: ImageError.self) { _ = try image.frame(at: 2) }
        #expect(try image.frame(at: 1).pixels.width == 4, "an earlier frame still decodes after the failure")
        #expect(throws: ImageError.self) {
            _ = try PNGCoder.shared.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        }
    }

    @Test func anIgnoredACTLLeavesAStillPNG() throws {
        let blueStill = try PNGCoder.shared.decode(
            APNGFixtures.file(Self.chunks().filter { $0.type != "acTL" }), options: ImageDecodeOptions())
        #expect(blueStill.frameCount == 1)
        #expect(Array(blueStill.pixels.pixel(x: 0, y: 0)) == Self.blue, "fcTL and fdAT without acTL are ignored")

        for (label, change) in [
            ("two acTL", { (c: inout [APNGFixtures.Chunk]) in c.insert(c[Self.index(c, "acTL")], at: 1) }),
            ("num_frames 0", { (c: inout [APNGFixtures.Chunk]) in c[Self.index(c, "acTL")].payload[3] = 0 }),
            ("num_frames 2^31", { (c: inout [APNGFixtures.Chunk]) in c[Self.index(c, "acTL")].payload[0] = 0x80 }),
            ("acTL of 4 bytes", { (c: inout [APNGFixtures.Chunk]) in c[Self.index(c, "acTL")].payload.removeLast(4) }),
            (
                "acTL after IDAT",
                { (c: inout [APNGFixtures.Chunk]) in
                    let acTL = c.remove(at: Self.index(c, "acTL"))
                    c.insert(acTL, at: Self.index(c, "IDAT") + 1)
                }
            ),
        ] as [(String, (inout [APNGFixtures.Chunk]) -> Void)] {
            var chunks = Self.chunks()
            change(&chunks)
            let data = APNGFixtures.file(chunks)
            let image = try PNGCoder.shared.decode(data, options: ImageDecodeOptions())
            #expect(image.frameCount == 1, "\(label)")
            #expect(Array(image.pixels.pixel(x: 0, y: 0)) == Self.blue, "\(label): the default image")
            #expect(PNGCoder.shared.probe(data)?.frameCount == 1, "\(label)")
        }
    }

    @Test func damageAfterTheFirstFrameDoesNotStopAFirstFrameDecode() throws {
        var chunks = Self.chunks()
        chunks[Self.index(chunks, "fdAT", 1)].payload[3] = 40  // bad sequence number in frame 1
        let data = APNGFixtures.file(chunks)
        let first = try PNGCoder.shared.decode(data, options: ImageDecodeOptions(firstFrameOnly: true))
        #expect(first.frameCount == 1)
        #expect(Array(first.pixels.pixel(x: 0, y: 0)) == Self.red)
        Self.expectFailure(data, .badImageData, "bad sequence number in frame 1")
    }

    @Test func aFirstFrameDecodeOfATruncatedAnimationNeedsOnlyTheFirstFrame() throws {
        let data = APNGFixtures.file(Self.chunks())
        // Cut inside the second fcTL: frame 0 (fcTL + fdAT) is whole, the rest is missing.
        let secondFCTL = data.ranges(of: Data("fcTL".utf8))[1].lowerBound
        let cut = data.prefix(secondFCTL + 10)
        let first = try PNGCoder.shared.decode(cut, options: ImageDecodeOptions(firstFrameOnly: true))
        #expect(first.frameCount == 1)
        #expect(Array(first.pixels.pixel(x: 0, y: 0)) == Self.red)
        Self.expectFailure(cut, .badImageData, "cut inside the second fcTL, every frame asked for")
        // A cut inside the first frame's own data still fails, first frame or not.
        let firstFDAT = data.ranges(of: Data("fdAT".utf8))[0].lowerBound
        #expect(throws: ImageError.self) {
            try PNGCoder.shared.decode(data.prefix(firstFDAT + 20), options: ImageDecodeOptions(firstFrameOnly: true))
        }
    }

    // MARK: Budgets, checked before any pixel is decoded

    static func animation(frames count: Int, width: Int = 8, height: Int = 8) -> Data {
        let frames = (0..<count).map { _ in APNGFixtures.Frame.solid(red, width: width, height: height) }
        return APNGFixtures.file(APNGFixtures.chunks(width: width, height: height, frames: frames))
    }

    @Test func aFrameCountOverTheBudgetIsRefusedFromACTL() throws {
        var options = ImageDecodeOptions()
        options.maxFrameCount = 4
        let data = Self.animation(frames: 5)
        #expect(throws: ImageError.self) { try PNGCoder.shared.decode(data, options: options) }
        do {
            _ = try PNGCoder.shared.decode(data, options: options)
        } catch let error as ImageError {
            #expect(error.code == .imageTooLarge)
        }
        // acTL alone decides: a file declaring 2^31 - 1 frames is refused without walking them.
        var chunks = APNGFixtures.chunks(
            width: 2, height: 2, frames: [.solid(Self.red, width: 2, height: 2)], numFrames: UInt32(Int32.max))
        chunks.removeLast()
        Self.expectFailure(APNGFixtures.file(chunks), .imageTooLarge, "2^31 - 1 frames declared")

        var lenient = options
        lenient.animationBudget.onExceeded = .firstFrameOnly
        let first = try PNGCoder.shared.decode(data, options: lenient)
        #expect(first.frameCount == 1)
        #expect(throws: ImageError.self) { try PNGCoder.shared.makeAnimatedProvider(for: data, options: lenient) }
    }

    @Test func preloadingMoreThanTheAnimationPixelBudgetIsRefused() throws {
        var options = ImageDecodeOptions(preloadAllFrames: true)
        options.maxAnimationPixelCount = 4 * 64 - 1  // four 8x8 frames do not fit
        let data = Self.animation(frames: 4)
        #expect {
            _ = try PNGCoder.shared.decode(data, options: options)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
        // On demand, only one frame is held at a time: fine.
        options.preloadAllFrames = false
        #expect(try PNGCoder.shared.decode(data, options: options).frameCount == 4)
    }

    @Test func theWorkBudgetCountsEveryDecodedFrame() throws {
        var options = ImageDecodeOptions()
        options.maxAnimationWorkPixelCount = 3 * 64  // three 8x8 frames per pass
        let data = Self.animation(frames: 5)
        let image = try PNGCoder.shared.decode(data, options: options)
        _ = try image.frame(at: 2)
        #expect {
            _ = try image.frame(at: 4)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
        options.preloadAllFrames = true
        #expect {
            _ = try PNGCoder.shared.decode(data, options: options)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
    }

    @Test func aCanvasOverThePixelBudgetIsRefusedFromIHDR() {
        var options = ImageDecodeOptions()
        options.maxPixelCount = 63
        #expect {
            _ = try PNGCoder.shared.decode(Self.animation(frames: 2), options: options)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
    }
}
