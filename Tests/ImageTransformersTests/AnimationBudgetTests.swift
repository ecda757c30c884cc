import ImageCore
import Testing

@testable import ImageTransformers

/// Transforming every frame of an animation (`.transformAnimatedImage`) materialises all of them: the image's
/// animation budget is checked before the first frame is decoded (issue 13 item 2), and hostile parameters never
/// trap (item 1).
@Suite("Whole-animation budget and hostile parameters")
struct AnimationBudgetTests {
    /// The shape: thousands of frames on a 1000x1000 canvas, decoded on demand by a counting provider.
    static func bigAnimation(frames: Int, budget: AnimationBudget = .default) -> (Image, SolidFrameProvider) {
        let size = PixelSize(width: 1000, height: 1000)
        let provider = SolidFrameProvider(frameCount: frames, size: size)
        let first = ImageFrame(pixels: FrameTests.frame(0, size: size), duration: 0.1)
        let image = Image(
            frames: [first], frameCount: frames, format: .gif, animatedProvider: provider, animationBudget: budget)
        return (image, provider)
    }

    static let transformers: [any Transformer] = [
        FlipTransformer(horizontal: true), ResizeTransformer(width: 100, height: 100), RotateTransformer(angle: 30),
        PipelineTransformer(CropTransformer(x: 0, y: 0, width: 10, height: 10), BlurTransformer(radius: 2)),
    ]

    @Test("1,000 frames x 1000x1000 is refused before any frame is decoded")
    func refusedBeforeWork() throws {
        for transformer in Self.transformers {
            let (image, provider) = Self.bigAnimation(frames: 1_000)
            let error = #expect(throws: ImageError.self) { try transformer.transform(image, forKey: "k") }
            #expect(error?.code == .imageTooLarge && error?.stage == .transform, "\(transformer.transformerKey)")
            #expect(provider.decodes.withLock { $0 } == 0, "\(transformer.transformerKey)")
        }
    }

    @Test("the first-frame policy transforms the poster frame only")
    func firstFramePolicy() throws {
        let (image, provider) = Self.bigAnimation(frames: 45_000, budget: AnimationBudget(onExceeded: .firstFrameOnly))
        let out = try FlipTransformer(horizontal: true).transform(image, forKey: "k")
        #expect(out.frameCount == 1 && out.frames.count == 1 && out.frames[0].duration == 0)
        #expect(provider.decodes.withLock { $0 } == 0)
    }

    @Test("within budget every frame is transformed")
    func withinBudget() throws {
        let (image, provider) = Self.bigAnimation(frames: 6)
        let out = try ResizeTransformer(width: 10, height: 10).transform(image, forKey: "k")
        #expect(out.frameCount == 6 && out.width == 10)
        #expect(provider.decodes.withLock { $0 } == 5)
    }

    @Test("a transform that grows each frame is checked again after the first frame")
    func growingOutput() throws {
        let budget = AnimationBudget(maxPixelCount: 20 * 1_000_000)
        let (image, provider) = Self.bigAnimation(frames: 15, budget: budget)
        // 15 x 1 MP fits; a 30-degree rotation with fitSize makes each frame about 1.87 MP: 28 MP does not.
        let error = #expect(throws: ImageError.self) {
            try RotateTransformer(angle: 30, fitSize: true).transform(image, forKey: "k")
        }
        #expect(error?.code == .imageTooLarge)
        #expect(provider.decodes.withLock { $0 } == 0, "refused after transforming the poster frame only")
    }

    @Test("hostile sizes and angles are errors or clamps, never traps")
    func hostileParameters() throws {
        let still = Image(pixels: FrameTests.frame(0, size: PixelSize(width: 8, height: 4)))
        let huge = ResizeTransformer(width: .max, height: 1, mode: .aspectFit)
        #expect(huge.outputSize(for: PixelSize(width: 1, height: 1)).width >= 1)
        _ = ResizeTransformer(width: 10, height: 10).outputSize(for: PixelSize(width: 0, height: 0))
        _ = ResizeTransformer(width: 0, height: 0, mode: .aspectFill).outputSize(for: PixelSize(width: 5, height: 5))
        for transformer: any Transformer in [
            huge, ResizeTransformer(width: .max, height: .max, mode: .fill), ResizeTransformer(width: -5, height: 3),
            RotateTransformer(angle: .nan), RotateTransformer(angle: .infinity), BlurTransformer(radius: .infinity),
            BlurTransformer(radius: -1), RoundCornerTransformer(radius: .nan),
            TintTransformer(color: .white, amount: .nan),
            CropTransformer(x: .max, y: .min, width: .max, height: 2),
        ] {
            _ = transformer.transformerKey
            do {
                _ = try transformer.transform(still, forKey: "k")
            } catch {
                #expect(error is ImageError, "\(transformer.transformerKey)")
            }
        }
    }
}
