import Foundation
import ImageCore
import ImageTestSupport
import JXLCoder
import Testing

/// Truncated, corrupt and bomb JPEG XL input: every case is a typed ``ImageError``, never a crash.
@Suite struct JXLHostileTests {
    static func expectError(
        _ data: Data, _ code: ImageError.Code? = nil, _ label: String,
        options: ImageDecodeOptions = ImageDecodeOptions()
    ) {
        do {
            let image = try JXLCoder.shared.decode(data, options: options)
            for index in 0..<image.frameCount { _ = try image.frame(at: index) }
            Issue.record("\(label): decoded \(image)")
        } catch let error as ImageError {
            if let code { #expect(error.code == code, "\(label): \(error)") }
            #expect(error.stage == .decode, "\(label)")
        } catch {
            Issue.record("\(label): not an ImageError: \(error)")
        }
    }

    @Test func aHeaderOverThePixelBudgetIsRefusedBeforeLibjxlRuns() {
        let bomb = JXLTestFiles.sizeHeaderOnly(width: 1 << 30, height: 1 << 30)
        #expect(JXLCoder.shared.probe(bomb).map { [$0.width, $0.height] } == [1 << 30, 1 << 30])
        Self.expectError(bomb, .imageTooLarge, "2^30 x 2^30 header")
        var options = ImageDecodeOptions()
        options.maxPixelCount = 47 * 32
        Self.expectError(JXLTestFiles.make(JXLTestFiles.Spec()), .imageTooLarge, "48x32 over 47x32", options: options)
        let decoder = JXLCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
        decoder.update(bomb, isFinal: false)
        #expect {
            _ = try decoder.currentImage()
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
    }

    @Test func everyTruncationIsAnError() {
        var spec = JXLTestFiles.Spec()
        spec.container = true
        for data in [JXLTestFiles.make(JXLTestFiles.Spec()), JXLTestFiles.make(spec)] {
            for cut in stride(from: 0, to: data.count, by: max(1, data.count / 60)) {
                Self.expectError(data.prefix(cut), .badImageData, "cut at \(cut) of \(data.count)")
            }
        }
    }

    @Test func truncatedAnimationsFailWhenTheirFramesAreListed() throws {
        let frames = (0..<4).map { i in
            ImageFrame(
                pixels: PixelBuffer(
                    width: 8, height: 8, layout: .gray8, bytes: Array(repeating: UInt8(i * 60), count: 64)),
                duration: 0.1)
        }
        let data = try JXLCoder.shared.encode(
            Image(frames: frames), as: .jxl, options: ImageEncodeOptions(lossless: true))
        Self.expectError(data.prefix(data.count - 3), .badImageData, "last frame cut")
    }

    @Test func corruptBytesNeverCrash() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["JXL_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        print("JXLHostileTests.corruptBytesNeverCrash seed \(seed) (rerun with JXL_SEED=\(seed))")
        var random = SeededGenerator(seed: seed)
        let original = JXLTestFiles.make(JXLTestFiles.Spec())
        for _ in 0..<60 {
            var data = original
            for _ in 0..<Int(random.next() % 4) + 1 {
                let index = 2 + Int(random.next() % UInt64(data.count - 2))
                data[index] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            }
            do {
                let image = try JXLCoder.shared.decode(data, options: ImageDecodeOptions())
                #expect(image.width > 0, "seed \(seed)")
            } catch {
                #expect(error is ImageError, "seed \(seed): \(error)")
            }
        }
    }

    @Test func notJPEGXLIsRefused() {
        Self.expectError(Data(), .badImageData, "empty")
        Self.expectError(Data([0xFF, 0x0A]), .badImageData, "signature only")
        Self.expectError(Data("not an image at all".utf8), .badImageData, "text")
        #expect(!JXLCoder.shared.canDecode(Data([0xFF, 0xD8, 0xFF])))
        // A container with a signature box and nothing else holds no codestream.
        Self.expectError(
            Data([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]), .badImageData, "empty container")
    }

    @Test func incrementalDecodingOfGarbageEndsInAnErrorNotACrash() {
        var data = JXLTestFiles.make(JXLTestFiles.Spec())
        data.replaceSubrange(40..<data.count, with: Data(repeating: 0xA5, count: data.count - 40))
        let decoder = JXLCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
        for end in stride(from: 0, through: data.count, by: 16) {
            decoder.update(data.prefix(end), isFinal: false)
            _ = try? decoder.currentImage()
        }
        decoder.update(data, isFinal: true)
        #expect(throws: ImageError.self) { try decoder.currentImage() }
    }
}
