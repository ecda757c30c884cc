import Foundation
import ImageCore
import ImageTestSupport
import Testing

/// A user's coder receives its own typed options through the context, like SDWebImage's custom `SDImageCoderOption`
/// keys passed in `SDWebImageContextImageCoderOptions` (issue 25, item 5); an option that changes the image is part
/// of the cache key, a hint is not.
@Suite struct CustomCoderOptionsTests {
    /// The gain a ``GainCoder`` multiplies its one sample by: changes the image.
    enum Gain: CoderOptionKey {
        typealias Value = Int
        static let name = "gain.factor"
    }

    /// A hint the coder records but that leaves the pixels alone.
    enum Hint: CoderOptionKey {
        typealias Value = String
        static let name = "gain.hint"
        static let changesImage = false
    }

    /// `GAIN` then one sample byte; decodes to a 1x1 gray image of sample × gain (clamped).
    final class GainCoder: ImageCoder, Sendable {
        static let format = ImageFormat(rawValue: "gain")
        private let seen = Locked<[(gain: Int?, hint: String?)]>([])

        var decodes: [(gain: Int?, hint: String?)] { seen.value }

        func canDecode(_ data: Data) -> Bool { data.starts(with: Array("GAIN".utf8)) }

        func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
            guard data.count == 5 else { throw ImageError(.badImageData, stage: .decode, message: "GAIN: 5 bytes") }
            let gain = options.coderOptions[Gain.self]
            seen.withLock { $0.append((gain, options.coderOptions[Hint.self])) }
            let sample = min(255, Int(data[data.startIndex + 4]) * (gain ?? 1))
            let pixels = PixelBuffer(width: 1, height: 1, layout: .gray8, bytes: [UInt8(sample)])
            return Image(frames: [ImageFrame(pixels: pixels)], format: Self.format)
        }

        func canEncode(to format: ImageFormat) -> Bool { format == Self.format }
        /// One gray sample, written as it is: the default serializer may keep derived entries in it.
        func encodesExactly(to format: ImageFormat) -> Bool { format == Self.format }

        /// `GAIN` and the first pixel's sample: what a derived key's entry on disk holds.
        func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
            Data("GAIN".utf8) + [image.pixels.bytes[0]]
        }
    }

    struct Setup {
        let coder = GainCoder()
        let cache = RecordingCache()
        let loader = ScriptedLoader()
        let manager: ImageManager
        let url = URL(string: "test://host/\(UUID().uuidString).gain")!

        init() {
            manager = ImageManager(
                cache: cache, loader: loader, coders: CodersManager(coders: [coder]), workPool: .cpu)
            manager.logHandler = { _ in }
            loader.set(.data(Data("GAIN".utf8) + [10], ResponseMetadata(url: url, statusCode: 200)), for: url)
        }

        func load(gain: Int?, hint: String? = nil) async throws -> ImageResult {
            var context = ImageContext()
            context[coderOption: Gain.self] = gain
            context[coderOption: Hint.self] = hint
            let recorder = DeliveryRecorder()
            manager.loadImage(with: url, context: context, completed: recorder.handler)
            guard let result = await recorder.waitForFinal() else { throw CancellationError() }
            return try result.get()
        }

        func sample(_ result: ImageResult) -> UInt8 { result.image.pixels.bytes[0] }
    }

    @Test("SDImageCoderOption custom keys: the user's coder receives its typed option from the load's context")
    func theCoderReceivesItsOption() async throws {
        let setup = Setup()
        let plain = try await setup.load(gain: nil)
        let doubled = try await setup.load(gain: 2)
        #expect(setup.sample(plain) == 10)
        #expect(setup.sample(doubled) == 20)
        #expect(setup.coder.decodes.map(\.gain) == [nil, 2])
    }

    @Test("SDImageCoderOption custom keys: an option that changes the image keys its own cache entry")
    func anImageChangingOptionIsAKeyPart() async throws {
        let setup = Setup()
        var context = ImageContext()
        context[coderOption: Gain.self] = 3
        #expect(setup.manager.cacheKey(for: setup.url, context: context)?.contains("coder(gain.factor=3)") == true)
        let first = try await setup.load(gain: 3)
        let hit = try await setup.load(gain: 3)
        let other = try await setup.load(gain: 4)
        #expect(setup.sample(first) == 30 && setup.sample(hit) == 30 && setup.sample(other) == 40)
        #expect(hit.cacheType == .memory, "the same value is the same entry")
        #expect(other.cacheType != .memory, "another value never gets the first value's pixels")
        #expect(setup.coder.decodes.map(\.gain) == [3, 4])
    }

    @Test("SDImageCoderOption custom keys: a hint that leaves the pixels alone shares the plain entry")
    func aHintIsNotAKeyPart() async throws {
        let setup = Setup()
        var context = ImageContext()
        context[coderOption: Hint.self] = "fast"
        #expect(setup.manager.cacheKey(for: setup.url, context: context) == setup.manager.cacheKey(for: setup.url))
        _ = try await setup.load(gain: nil, hint: "fast")
        let plain = try await setup.load(gain: nil)
        #expect(plain.cacheType == .memory)
        #expect(setup.coder.decodes.map(\.hint) == ["fast"])
    }

    @Test("SDImageCoderOption custom keys: a derived entry read back from disk is not given the option a second time")
    func aProductFromDiskIsNotDecodedWithTheOptionAgain() async throws {
        let setup = Setup()
        var context = ImageContext()
        context[coderOption: Gain.self] = 2
        let key = try #require(setup.manager.cacheKey(for: setup.url, context: context))
        let cold = try await setup.load(gain: 2)
        #expect(setup.sample(cold) == 20)
        #expect(await waitUntil { setup.cache.diskData(forKey: key) != nil }, "the product is stored as bytes")
        #expect(setup.cache.diskData(forKey: key) == Data("GAIN".utf8) + [20])
        await withCheckedContinuation { done in setup.cache.clear(cacheType: .memory) { done.resume() } }
        let warm = try await setup.load(gain: 2)
        #expect(warm.cacheType == .disk)
        #expect(setup.sample(warm) == 20, "the entry's pixels carry the gain already")
    }
}
