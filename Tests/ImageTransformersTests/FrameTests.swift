import ImageCore
import ImageTransformers
import Synchronization
import Testing

/// Serves frames of a solid colour per index and counts decodes; can be told to fail.
final class SolidFrameProvider: AnimatedImageProvider {
    let frameCount: Int
    let loopCount = 3
    let canvasSize: PixelSize
    let failAt: Int?
    let decodes = Mutex(0)

    init(frameCount: Int, size: PixelSize, failAt: Int? = nil) {
        self.frameCount = frameCount
        self.canvasSize = size
        self.failAt = failAt
    }

    func duration(at index: Int) -> Double { 0.1 * Double(index + 1) }

    func frame(at index: Int) throws -> ImageFrame {
        decodes.withLock { $0 += 1 }
        if index == failAt { throw ImageError(.badImageData, stage: .decode, message: "broken frame") }
        return ImageFrame(pixels: FrameTests.frame(index, size: canvasSize), duration: duration(at: index))
    }
}

@Suite("Frames, metadata and pipelines")
struct FrameTests {
    /// A frame whose left half is colour `index` and right half black.
    static func frame(_ index: Int, size: PixelSize) -> PixelBuffer {
        Fixtures.buffer(width: size.width, height: size.height) { x, _ in
            x < size.width / 2 ? [UInt8(40 * (index + 1)), 0, 0, 255] : [0, 0, 0, 255]
        }
    }

    static func animation() -> Image {
        let size = PixelSize(width: 8, height: 4)
        let frames = (0..<3).map { ImageFrame(pixels: frame($0, size: size), duration: 0.1 * Double($0 + 1)) }
        let metadata = ImageMetadata(orientation: .up, sourceOrientation: .right, iccProfile: [1, 2, 3])
        return Image(frames: frames, loopCount: 2, format: .gif, metadata: metadata)
    }

    static let transformers: [any Transformer] = [
        FlipTransformer(horizontal: true), RotateTransformer(angle: 90), RotateTransformer(angle: 20),
        CropTransformer(x: 0, y: 0, width: 5, height: 4), ResizeTransformer(width: 16, height: 16),
        BlurTransformer(radius: 1), TintTransformer(color: .white, amount: 0.1), RoundCornerTransformer(radius: 2),
        PipelineTransformer(ResizeTransformer(width: 4, height: 4, mode: .aspectFill), FlipTransformer(vertical: true)),
    ]

    @Test("every frame is transformed; durations, loop count, format and metadata are kept")
    func everyFrame() throws {
        let image = Self.animation()
        for transformer in Self.transformers {
            let out = try transformer.transform(image, forKey: "k")
            #expect(out.frames.count == 3 && out.frameCount == 3, "\(transformer.transformerKey)")
            #expect(out.frames.map(\.duration) == (0..<3).map { 0.1 * Double($0 + 1) })
            #expect(out.loopCount == 2 && out.format == .gif)
            #expect(out.metadata.isTransformed)
            #expect(out.metadata.iccProfile == [1, 2, 3] && out.metadata.sourceOrientation == .right)
            // Each frame equals the transformer applied to that frame alone.
            for index in 0..<3 {
                let single = try transformer.transform(Image(pixels: image.frames[index].pixels), forKey: "k")
                #expect(out.frames[index].pixels == single.pixels, "\(transformer.transformerKey) frame \(index)")
            }
        }
        let flipped = try FlipTransformer(horizontal: true).transform(image, forKey: "k")
        #expect(Fixtures.px(flipped.frames[2].pixels, 7, 0) == [120, 0, 0, 255])
        #expect(Fixtures.px(flipped.frames[0].pixels, 7, 0) == [40, 0, 0, 255])
    }

    @Test("frames not held are decoded through the provider and the result holds them all")
    func providerFrames() throws {
        let size = PixelSize(width: 6, height: 6)
        let provider = SolidFrameProvider(frameCount: 4, size: size)
        let image = Image(
            frames: [ImageFrame(pixels: Self.frame(0, size: size), duration: 0.1)], frameCount: 4,
            animatedProvider: provider)
        let out = try RotateTransformer(angle: 180).transform(image, forKey: "k")
        #expect(out.frames.count == 4 && out.animatedProvider == nil)
        #expect(provider.decodes.withLock { $0 } == 3)
        #expect(out.frames.map(\.duration) == (0..<4).map { 0.1 * Double($0 + 1) })
        #expect(Fixtures.px(out.frames[3].pixels, 5, 0) == [160, 0, 0, 255])
        #expect(Fixtures.px(out.frames[3].pixels, 0, 0) == [0, 0, 0, 255])
    }

    @Test("a provider failure surfaces as a typed error")
    func providerFailure() {
        let size = PixelSize(width: 4, height: 4)
        let image = Image(
            frames: [ImageFrame(pixels: Self.frame(0, size: size))], frameCount: 3,
            animatedProvider: SolidFrameProvider(frameCount: 3, size: size, failAt: 2))
        let error = #expect(throws: ImageError.self) { try BlurTransformer(radius: 1).transform(image, forKey: "k") }
        #expect(error?.code == .badImageData)
    }

    @Test("pipelines apply their parts in order")
    func pipelineOrder() throws {
        let source = Image(pixels: Fixtures.randomOpaque(width: 10, height: 6, seed: 11))
        let crop = CropTransformer(x: 0, y: 0, width: 4, height: 6)
        let rotate = RotateTransformer(angle: 90)
        let cropThenRotate = try PipelineTransformer(crop, rotate).transform(source, forKey: "k")
        let rotateThenCrop = try PipelineTransformer(rotate, crop).transform(source, forKey: "k")
        let manual = try rotate.transform(try crop.transform(source, forKey: "k"), forKey: "k")
        #expect(cropThenRotate.pixels == manual.pixels)
        #expect(cropThenRotate.width == 6 && cropThenRotate.height == 4)
        #expect(rotateThenCrop.width == 4 && rotateThenCrop.height == 6)
        #expect(cropThenRotate.metadata.isTransformed)
        let empty = try PipelineTransformer([]).transform(source, forKey: "k")
        #expect(empty.pixels == source.pixels && empty.metadata.isTransformed)
    }

    @Test("a failing part stops the pipeline with its error")
    func pipelineFailure() {
        let source = Image(pixels: Fixtures.randomOpaque(width: 4, height: 4, seed: 2))
        let pipeline = PipelineTransformer(
            FlipTransformer(horizontal: true), CropTransformer(x: 9, y: 9, width: 1, height: 1))
        let error = #expect(throws: ImageError.self) { try pipeline.transform(source, forKey: "k") }
        #expect(error?.code == .transformFailed)
    }
}
