import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// A value-type coder that claims the test format and tags its output.
private struct TaggingCoder: ImageCoder {
    let tag: UInt8
    func canDecode(_ data: Data) -> Bool { data.starts(with: Array("TIMG".utf8)) }
    func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        Image(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8, bytes: [tag]))
    }
    func canEncode(to format: ImageFormat) -> Bool { false }
    func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        throw ImageError(.noCoder, stage: .encode)
    }
}

private struct ForeignError: Error {}

@Suite struct CodersManagerTests {
    @Test func lastAddedCoderIsAskedFirst() throws {
        let manager = CodersManager()
        manager.addCoder(TestCoder())
        let data = TestCoder.data(width: 2, height: 2)
        #expect(try manager.decode(data, options: ImageDecodeOptions()).width == 2)
        manager.addCoder(TaggingCoder(tag: 7))
        #expect(try manager.decode(data, options: ImageDecodeOptions()).pixels.bytes == [7])
        manager.removeCoder(TaggingCoder(tag: 0))
        #expect(try manager.decode(data, options: ImageDecodeOptions()).width == 2)
        #expect(manager.coders.count == 1)
    }

    @Test func addingTheSameInstanceAgainMovesItToTheTop() throws {
        let test = TestCoder()
        let manager = CodersManager(coders: [test, TaggingCoder(tag: 1)])
        manager.addCoder(test)
        #expect(manager.coders.count == 2)
        #expect(try manager.decode(TestCoder.data(width: 3, height: 1), options: ImageDecodeOptions()).width == 3)
    }

    @Test func unknownBytesFailWithNoCoderAndEmptyWithBadData() {
        let manager = CodersManager(coders: [TestCoder()])
        #expect(throws: ImageError.self) { try manager.decode(Data([1, 2, 3]), options: ImageDecodeOptions()) }
        do {
            _ = try manager.decode(Data([1, 2, 3]), options: ImageDecodeOptions())
        } catch let error as ImageError {
            #expect(error.code == .noCoder)
            #expect(error.stage == .decode)
        } catch { Issue.record("unexpected \(error)") }
        do {
            _ = try manager.decode(Data(), options: ImageDecodeOptions())
        } catch let error as ImageError {
            #expect(error.code == .badImageData)
        } catch { Issue.record("unexpected \(error)") }
    }

    @Test func pixelBudgetIsCheckedFromTheHeaderBeforeDecoding() {
        let coder = TestCoder()
        let manager = CodersManager(coders: [coder])
        let huge = TestCoder.data(width: 60000, height: 60000)
        do {
            _ = try manager.decode(huge, options: ImageDecodeOptions(maxPixelCount: 100_000_000))
            Issue.record("decoded a 3.6 GP image")
        } catch let error as ImageError {
            #expect(error.code == .imageTooLarge)
        } catch { Issue.record("unexpected \(error)") }
        #expect(coder.decodeCount == 0, "the coder must not be asked to decode (and allocate) at all")
    }

    @Test func foreignErrorsAreWrappedAsBadImageData() {
        let manager = CodersManager(coders: [TestCoder(failure: ForeignError())])
        do {
            _ = try manager.decode(TestCoder.data(width: 1, height: 1), options: ImageDecodeOptions())
        } catch let error as ImageError {
            #expect(error.code == .badImageData)
            #expect(error.underlying is SendableErrorBox)
        } catch { Issue.record("unexpected \(error)") }
    }

    @Test func encodesWithTheFirstCapableCoder() throws {
        let manager = CodersManager(coders: [TestCoder()])
        let image = try manager.decode(TestCoder.data(width: 4, height: 2), options: ImageDecodeOptions())
        let data = try manager.encode(image, as: .testImage, options: ImageEncodeOptions())
        #expect(try manager.decode(data, options: ImageDecodeOptions()).width == 4)
        #expect(throws: ImageError.self) { try manager.encode(image, as: .jxl, options: ImageEncodeOptions()) }
    }

    @Test func thumbnailTargetSizeFitsAndNeverUpscales() {
        let options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 256, height: 256))
        #expect(options.targetSize(forSourceWidth: 4000, height: 3000) == PixelSize(width: 256, height: 192))
        #expect(options.targetSize(forSourceWidth: 100, height: 50) == PixelSize(width: 100, height: 50))
        let fill = ImageDecodeOptions(
            thumbnailPixelSize: PixelSize(width: 256, height: 256), preserveAspectRatio: false)
        #expect(fill.targetSize(forSourceWidth: 4000, height: 3000) == PixelSize(width: 256, height: 256))
        let budget = ImageDecodeOptions(scaleDownLimitBytes: 4 * 1000 * 1000)
        let scaled = budget.targetSize(forSourceWidth: 4000, height: 4000)
        #expect(scaled.width * scaled.height * 4 <= 4 * 1000 * 1000)
        #expect(scaled.width >= 990)
    }
}
