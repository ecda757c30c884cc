import ImageCore
import PropertyBased
import Testing

@testable import ImageTransformers

/// ``ResizeTransformer`` (integer box pre-reduction, then the separable filter) against ``ResizeReference``, a
/// double-precision model written from the definitions, over random sizes and scale factors: reductions by up to
/// 12× (the box path starts at 4×) and enlargements, both Lanczos-3 and Catmull-Rom, every mode. Stated bound:
/// 1 level per channel. (The box *filter* is left to the fixed cases of ``ResizeTests``: its window ends fall
/// exactly on pixel boundaries, where a Double model decides by rounding.) Failures print PropertyBased's seed
/// (`.fixedSeed(...)`) and the case.
@Suite("Resize properties")
struct ResizePropertyTests {
    struct Case: CustomStringConvertible {
        var width: Int
        var height: Int
        var targetWidth: Int
        var targetHeight: Int
        var filter: ResizeFilter
        var mode: ResizeTransformer.Mode
        var seed: UInt64

        var description: String {
            "\(width)x\(height) → \(targetWidth)x\(targetHeight) \(mode) \(filter), pixel seed \(seed)"
        }
    }

    /// Sources 4...60 per side; targets from a twelfth of the source to twice it.
    static let cases = zip(
        zip(Gen.int(in: 4...60), Gen.int(in: 4...60), Gen.int(in: 1...24), Gen.int(in: 1...24)),
        zip(Gen.int(in: 0...1), Gen.int(in: 0...2), Gen.uint64())
    ).map { all in
        let (geometry, kind) = all
        let (width, height) = (geometry.0, geometry.1)
        // Targets as a fraction n/12 of the source (at least 1 pixel), n in 1...24.
        return Case(
            width: width, height: height, targetWidth: max(1, width * geometry.2 / 12),
            targetHeight: max(1, height * geometry.3 / 12), filter: [.lanczos3, .catmullRom][kind.0],
            mode: [.fill, .aspectFit, .aspectFill][kind.1], seed: kind.2)
    }

    @Test("matches the double-precision model within 1 level, for random sizes, scales, filters and modes")
    func matchesModel() async throws {
        await propertyCheck(count: 60, input: Self.cases) { c in
            let source = Fixtures.randomOpaque(width: c.width, height: c.height, seed: c.seed)
            let size = PixelSize(width: c.targetWidth, height: c.targetHeight)
            let out = try ResizeTransformer(size: size, mode: c.mode, filter: c.filter)
                .transform(Image(pixels: source), forKey: "k").pixels
            let model = ResizeReference.resize(source, to: size, mode: c.mode, filter: c.filter)
            #expect(out.height == model.count && out.width == model.first?.count, "\(c)")
            guard out.height == model.count && out.width == model.first?.count else { return }
            #expect(ResizeReference.maxDifference(out, model) <= 1, "\(c)")
        }
    }

    /// Colour is compared weighted by alpha (a straight value is only as precise as its alpha allows), against the
    /// model's straight value with the SDK's rule for overshoot (colour un-premultiplied by the filtered alpha,
    /// then clamped).
    @Test("with random alpha, alpha-weighted colour and alpha match the model within 1 level (box path included)")
    func alphaMatchesModelPremultiplied() async throws {
        await propertyCheck(count: 40, input: Self.cases) { c in
            var random = Fixtures.Random(seed: c.seed)
            let source = Fixtures.buffer(width: c.width, height: c.height) { _, _ in
                [random.byte(), random.byte(), random.byte(), random.byte()]
            }
            let size = PixelSize(width: c.targetWidth, height: c.targetHeight)
            let out = try ResizeTransformer(size: size, mode: .fill, filter: c.filter)
                .transform(Image(pixels: source), forKey: "k").pixels
            let model = ResizeReference.resize(source, to: size, mode: .fill, filter: c.filter)
            var worst = 0.0
            for y in 0..<out.height {
                for x in 0..<out.width {
                    let p = Fixtures.px(out, x, y).map(Double.init)
                    let expected = ResizeReference.straight(model[y][x])
                    worst = max(worst, abs(p[3] - expected[3]))
                    for ch in 0..<3 { worst = max(worst, abs(p[ch] - expected[ch]) * expected[3] / 255) }
                }
            }
            #expect(worst <= 1, "\(c): off by \(worst)")
        }
    }

    /// The random cases above draw these rarely (CI once met one): a thin side that a fit scales below half a
    /// pixel. The SDK keeps it one pixel wide, and so must the model, or the model divides by zero.
    @Test(
        "aspect-fit of a thin source keeps at least one pixel per side, as the model does",
        arguments: [
            (60, 4, 5, 1), (4, 60, 1, 5), (59, 5, 4, 24), (7, 58, 12, 2),
        ])
    func thinSourcesFitToOnePixel(width: Int, height: Int, targetWidth: Int, targetHeight: Int) throws {
        let source = Fixtures.randomOpaque(width: width, height: height, seed: UInt64(width * 100 + height))
        let size = PixelSize(width: targetWidth, height: targetHeight)
        let out = try ResizeTransformer(size: size, mode: .aspectFit, filter: .lanczos3)
            .transform(Image(pixels: source), forKey: "k").pixels
        #expect(out.width >= 1 && out.height >= 1)
        let model = ResizeReference.resize(source, to: size, mode: .aspectFit, filter: .lanczos3)
        #expect(out.height == model.count && out.width == model.first?.count)
        guard out.height == model.count && out.width == model.first?.count else { return }
        #expect(ResizeReference.maxDifference(out, model) <= 1)
    }
}
