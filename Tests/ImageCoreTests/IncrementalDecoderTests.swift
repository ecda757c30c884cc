import Foundation
import ImageCore
import ImageTestSupport
import PropertyBased
import Testing

/// The incremental-decoding scaffold (issue 32, item 7) on a format made for the test: "ROWS", width, height, the
/// gray rows, then an end byte. Its step previews the complete rows (progress = rows), so the properties can say
/// exactly what each preview must hold; its full decode accepts a file cut after a row and flags it incomplete, as
/// libjpeg does. Failures print PropertyBased's seed and the case.
@Suite struct IncrementalDecoderTests {
    /// One random file and how it arrives.
    struct Case: CustomStringConvertible {
        var width: Int
        var height: Int
        var pixelSeed: UInt64
        /// Sorted prefix lengths handed over before the final update.
        var splits: [Int]
        /// Where the final bytes end (the whole file when nil).
        var cut: Int?

        var file: Data { RowFormat.file(width: width, height: height, seed: pixelSeed) }
        var finalBytes: Data { cut.map { file.prefix($0) } ?? file }
        var description: String {
            "\(width)x\(height) pixels \(pixelSeed), splits \(splits), cut \(cut.map(String.init) ?? "none")"
        }
    }

    static func makeCase(width: Int, height: Int, pixelSeed: UInt64, splitSeed: UInt64, splits: Int, cutting: Bool)
        -> Case
    {
        let length = RowFormat.headerLength + width * height + 1
        var rng = SplitMix64(seed: splitSeed)
        let cut = cutting ? Int(rng.next() % UInt64(length)) : nil
        let end = cut ?? length
        let points = (0..<splits).map { _ in Int(rng.next() % UInt64(end + 1)) }.sorted()
        return Case(width: width, height: height, pixelSeed: pixelSeed, splits: points, cut: cut)
    }

    /// Feeds every split, then the final bytes; checks each preview against the model and returns the final outcome.
    static func run(_ c: Case, step: RowStep, options: ImageDecodeOptions = .init()) -> Result<Image, ImageError> {
        let decoder = IncrementalDecoder(options: options, step: step)
        let bytes = c.finalBytes
        for split in c.splits {
            let prefix = bytes.prefix(split)
            decoder.update(prefix, isFinal: false)
            let preview: Image?
            do {
                preview = try decoder.currentImage()
            } catch {
                Issue.record("\(c): a preview of \(split) bytes threw \(error)")
                continue
            }
            guard let preview else {
                #expect(step.imageCalls.isEmpty, "\(c): the step gave an image but there is no preview at \(split)")
                continue
            }
            #expect(preview.metadata.isPartial && !preview.metadata.isIncomplete, "\(c): a preview not marked partial")
            // The preview shows the rows of the prefix of the step's last image: never fewer than before.
            let shown = RowFormat.completeRows(prefix.prefix(step.imageCalls.last ?? 0))
            #expect(preview.pixels == RowFormat.pixels(of: bytes, rows: shown), "\(c): preview at \(split) bytes")
        }
        decoder.update(bytes, isFinal: true)
        do throws(ImageError) {
            guard let image = try decoder.currentImage() else {
                Issue.record("\(c): no final image")
                return .failure(ImageError(.badImageData, stage: .decode, message: "no final image"))
            }
            return .success(image)
        } catch {
            return .failure(error)
        }
    }

    /// The step's own full decode of `data`, as the scaffold reports its errors.
    static func oneShot(_ data: Data) -> Result<Image, ImageError> {
        do {
            return .success(try RowStep().decodeFinal(data))
        } catch {
            return .failure(ImageError.wrap(error, as: .badImageData, stage: .decode))
        }
    }

    @Test("any chunking gives the one-shot decode, previews are partial, a step is asked only about new bytes")
    func chunkingGivesTheOneShotDecode() async {
        await propertyCheck(
            count: 300, input: Gen.int(in: 1...12), Gen.int(in: 1...12), Gen.uint64(), Gen.uint64(),
            Gen.int(in: 0...20),
            Gen.bool
        ) { width, height, pixelSeed, splitSeed, splits, oddRowsShowNothing in
            let c = Self.makeCase(
                width: width, height: height, pixelSeed: pixelSeed, splitSeed: splitSeed, splits: splits,
                cutting: false)
            let step = RowStep()
            step.oddRowsShowNothing = oddRowsShowNothing
            let final = Self.run(c, step: step)
            let oneShot = Self.oneShot(c.finalBytes)
            #expect(Self.same(final, oneShot), "\(c)")
            #expect((try? final.get())?.metadata.isIncomplete == false, "\(c): a whole file is complete")
            // Asked only about new bytes (also after a preview that showed nothing new), and an image only shows
            // more rows than the last one.
            #expect(zip(step.previewCalls, step.previewCalls.dropFirst()).allSatisfy { $0 < $1 }, "\(c)")
            let imageRows = step.imageCalls.map { RowFormat.completeRows(c.finalBytes.prefix($0)) }
            #expect(zip(imageRows, imageRows.dropFirst()).allSatisfy { $0 < $1 }, "\(c)")
        }
    }

    @Test("bytes cut short give the one-shot decode of the cut: an error or an image flagged incomplete")
    func cutBytesGiveTheOneShotDecode() async {
        await propertyCheck(
            count: 300, input: Gen.int(in: 1...12), Gen.int(in: 1...12), Gen.uint64(), Gen.uint64(), Gen.int(in: 0...20)
        ) { width, height, pixelSeed, splitSeed, splits in
            let c = Self.makeCase(
                width: width, height: height, pixelSeed: pixelSeed, splitSeed: splitSeed, splits: splits,
                cutting: true)
            let final = Self.run(c, step: RowStep())
            let oneShot = Self.oneShot(c.finalBytes)
            #expect(Self.same(final, oneShot), "\(c)")
            switch final {
            case .success(let image): #expect(image.metadata.isIncomplete && !image.metadata.isPartial, "\(c)")
            case .failure(let error): #expect(error.code == .badImageData, "\(c): \(error)")
            }
        }
    }

    @Test("over the budget: no preview is decoded, every preview call says imageTooLarge, the final decode decides")
    func budgetIsCheckedBeforeAnyPreview() throws {
        let data = RowFormat.file(width: 12, height: 12, seed: 1)
        let step = RowStep()
        let decoder = IncrementalDecoder(options: ImageDecodeOptions(maxPixelCount: 100), step: step)
        decoder.update(data.prefix(3), isFinal: false)
        #expect(try decoder.currentImage() == nil, "no header yet")
        for end in [RowFormat.headerLength, 40, 80, data.count] {
            decoder.update(data.prefix(end), isFinal: false)
            #expect(throws: ImageError.self) { try decoder.currentImage() }
            do { _ = try decoder.currentImage() } catch { #expect(error.code == .imageTooLarge) }
        }
        #expect(step.previewCalls.isEmpty, "a preview of an image over budget was decoded")
        decoder.update(data, isFinal: true)
        #expect(try decoder.currentImage()?.width == 12, "the step's full decode has the last word")
    }

    @Test("a failing preview stops the previews and keeps the last; errors of any type reach the caller as ImageError")
    func previewFailureStopsPreviewsAndErrorsAreMapped() throws {
        let data = RowFormat.file(width: 4, height: 6, seed: 2)
        let step = RowStep()
        step.failAfterRows = 2
        let decoder = IncrementalDecoder(options: .init(), step: step)
        decoder.update(data.prefix(RowFormat.headerLength + 8), isFinal: false)
        let first = try #require(try decoder.currentImage())
        decoder.update(data.prefix(RowFormat.headerLength + 16), isFinal: false)
        #expect(try decoder.currentImage() === first, "the failure keeps the last preview")
        let calls = step.previewCalls.count
        decoder.update(data.prefix(RowFormat.headerLength + 20), isFinal: false)
        #expect(try decoder.currentImage() === first)
        #expect(step.previewCalls.count == calls, "no preview after a failure")
        step.finalThrowsForeignError = true
        decoder.update(data, isFinal: true)
        for _ in 0..<2 {
            #expect(throws: ImageError.self) { try decoder.currentImage() }
            do { _ = try decoder.currentImage() } catch {
                #expect(error.code == .badImageData && error.stage == .decode)
            }
        }
        #expect(step.finalCalls == 1, "the final decode runs once")
    }

    @Test("a preview the step did not mark is marked partial; a finished preview stands until the final image")
    func previewsAreMarkedAndFinishedStands() throws {
        let data = RowFormat.file(width: 3, height: 2, seed: 3)
        let step = RowStep()
        step.marksPreviews = false
        let decoder = IncrementalDecoder(options: .init(), step: step)
        decoder.update(data.prefix(data.count - 1), isFinal: false)  // every row, no end byte: `finished`
        let preview = try #require(try decoder.currentImage())
        #expect(preview.metadata.isPartial && !preview.metadata.isIncomplete)
        decoder.update(data, isFinal: false)
        #expect(try decoder.currentImage() === preview)
        #expect(step.previewCalls.count == 1, "a finished step is not asked again")
        decoder.update(data, isFinal: true)
        #expect(try decoder.currentImage()?.metadata.isPartial == false)
    }

    @Test("a proportional spacing costs O(log n) previews over a download fed a byte at a time")
    func proportionalSpacingIsLogarithmic() throws {
        final class BytesStep: IncrementalDecoderStep {
            var previews = 0
            func header(in data: Data) throws -> PixelSize? { PixelSize(width: 1, height: 1) }
            func progress(in data: Data) -> IncrementalProgress? {
                IncrementalProgress(units: data.count, minimumGain: 1024, proportionalDivisor: 4)
            }
            func preview(of data: Data) throws -> IncrementalPreview {
                previews += 1
                return .image(Image(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8)))
            }
            func decodeFinal(_ data: Data) throws -> Image {
                Image(pixels: PixelBuffer(width: 1, height: 1, layout: .gray8))
            }
        }
        let step = BytesStep()
        let decoder = IncrementalDecoder(options: .init(), step: step)
        let total = 1 << 20
        for end in stride(from: 1, through: total, by: 4099) {
            decoder.update(Data(count: end), isFinal: false)
            _ = try decoder.currentImage()
        }
        // 1 KiB, then each preview at least 25% past the last: log(1 MiB / 1 KiB) / log(1.25) ≈ 31.
        #expect(step.previews >= 10 && step.previews <= 32, "\(step.previews) previews")
    }

    static func same(_ a: Result<Image, ImageError>, _ b: Result<Image, ImageError>) -> Bool {
        switch (a, b) {
        case (.success(let x), .success(let y)): x.pixels == y.pixels && x.metadata == y.metadata
        case (.failure(let x), .failure(let y)): x.code == y.code
        default: false
        }
    }
}

/// The test format: "ROWS", width, height (one byte each), width × height gray bytes, then 0xEE.
enum RowFormat {
    static let headerLength = 6

    static func file(width: Int, height: Int, seed: UInt64) -> Data {
        var rng = SplitMix64(seed: seed)
        var bytes = Array("ROWS".utf8) + [UInt8(width), UInt8(height)]
        bytes += (0..<(width * height)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        return Data(bytes + [0xEE])
    }

    static func size(_ data: Data) -> PixelSize? {
        guard data.count >= headerLength else { return nil }
        let b = data.startIndex
        return PixelSize(width: Int(data[b + 4]), height: Int(data[b + 5]))
    }

    static func completeRows(_ data: Data) -> Int {
        guard let size = size(data), size.width > 0 else { return 0 }
        return min(size.height, (data.count - headerLength) / size.width)
    }

    /// The first `rows` rows of the file, the rest zero.
    static func pixels(of data: Data, rows: Int) -> PixelBuffer {
        let size = size(data)!
        var bytes = [UInt8](repeating: 0, count: size.width * size.height)
        let start = data.startIndex + headerLength
        for i in 0..<(rows * size.width) { bytes[i] = data[start + i] }
        return PixelBuffer(width: size.width, height: size.height, layout: .gray8, bytes: bytes)
    }
}

/// The test format's step, recording what the scaffold asked of it.
final class RowStep: IncrementalDecoderStep {
    /// Byte counts of every preview call, and of those that gave an image.
    var previewCalls: [Int] = []
    var imageCalls: [Int] = []
    /// Odd row counts preview nothing new (a step that needs more bytes than a row, as JPEG's may).
    var oddRowsShowNothing = false
    var finalCalls = 0
    var marksPreviews = true
    var failAfterRows: Int?
    var finalThrowsForeignError = false

    struct ForeignError: Error {}

    func header(in data: Data) throws -> PixelSize? {
        guard let size = RowFormat.size(data) else { return nil }
        guard data.starts(with: Array("ROWS".utf8)) else {
            throw ImageError(.badImageData, stage: .decode, message: "not ROWS")
        }
        return size
    }

    func progress(in data: Data) -> IncrementalProgress? {
        let rows = RowFormat.completeRows(data)
        return rows > 0 ? IncrementalProgress(units: rows) : nil
    }

    func preview(of data: Data) throws -> IncrementalPreview {
        previewCalls.append(data.count)
        let rows = RowFormat.completeRows(data)
        if let failAfterRows, rows > failAfterRows { throw ForeignError() }
        if oddRowsShowNothing && rows % 2 == 1 && rows < RowFormat.size(data)!.height { return .nothingNew }
        imageCalls.append(data.count)
        let image = Image(
            pixels: RowFormat.pixels(of: data, rows: rows), metadata: ImageMetadata(isPartial: marksPreviews))
        return rows == RowFormat.size(data)!.height ? .finished(image) : .image(image)
    }

    /// The whole file, or a file cut after its first row (flagged incomplete); anything shorter is bad data.
    func decodeFinal(_ data: Data) throws -> Image {
        finalCalls += 1
        if finalThrowsForeignError { throw ForeignError() }
        guard let size = try header(in: data), size.width > 0, size.height > 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "no header")
        }
        try ImageDecodeOptions().checkPixelBudget(width: size.width, height: size.height)
        let rows = RowFormat.completeRows(data)
        guard rows > 0 else { throw ImageError(.badImageData, stage: .decode, message: "no row") }
        let whole = data.count >= RowFormat.headerLength + size.width * size.height + 1
        return Image(
            pixels: RowFormat.pixels(of: data, rows: rows), metadata: ImageMetadata(isIncomplete: !whole))
    }
}
