import Foundation
import ImageCore

extension ImageFormat {
    /// The test format of ``TestCoder``.
    public static let testImage = ImageFormat(rawValue: "timg")
}

/// A coder for a tiny test format: `TIMG`, UInt16 width, UInt16 height (big-endian), UInt8 frame count, then
/// one RGBA colour per frame (every pixel of a frame has that colour).
///
/// Counts decodes, can sleep to simulate a slow decode, and can be told to fail. Thread-safe.
public final class TestCoder: ProgressiveImageCoder, Sendable {
    private struct State: Sendable {
        var decodeCount = 0
        var encodeCount = 0
        var maxConcurrentDecodes = 0
        var runningDecodes = 0
        var decodeThreadsOnCooperativePool = 0
    }

    /// A coder option of the test format that changes the image: the decoder XORs every pixel's green sample with
    /// it. Applying it twice undoes it, so a pipeline that applies it twice (or never) shows in the pixels.
    public enum Tint: CoderOptionKey {
        /// The XOR mask.
        public typealias Value = UInt8
        /// The option's name (its key part: `coder(timg.tint=N)`).
        public static let name = "timg.tint"
    }

    private let state = Locked(State())
    /// Seconds each decode sleeps.
    public let decodeDelay: TimeInterval
    /// When set, every decode throws this.
    public let failure: (any Error & Sendable)?
    /// Called at ``TestStage/decode``.
    public let hook = StageHook()
    /// Holds decodes (after they counted as running) while closed; see ``holdDecodes()``.
    private let gate = NSCondition()
    private let gateClosed = Locked(false)

    /// Creates a coder.
    public init(decodeDelay: TimeInterval = 0, failure: (any Error & Sendable)? = nil) {
        self.decodeDelay = decodeDelay
        self.failure = failure
    }

    /// Decodes so far.
    public var decodeCount: Int { state.withLock { $0.decodeCount } }
    /// Encodes so far.
    public var encodeCount: Int { state.withLock { $0.encodeCount } }
    /// Most decodes seen running at once.
    public var maxConcurrentDecodes: Int { state.withLock { $0.maxConcurrentDecodes } }
    /// Decodes running now (held ones included).
    public var runningDecodes: Int { state.withLock { $0.runningDecodes } }

    /// Makes every decode wait, once running, until ``releaseDecodes()``.
    public func holdDecodes() { gateClosed.withLock { $0 = true } }

    /// Lets held and future decodes run.
    public func releaseDecodes() {
        gate.lock()
        gateClosed.withLock { $0 = false }
        gate.broadcast()
        gate.unlock()
    }

    /// Encodes a test image of `width` x `height` with one colour per frame.
    public static func data(width: Int, height: Int, colors: [RGBAColor] = [.white]) -> Data {
        var bytes = Array("TIMG".utf8)
        bytes += [UInt8(width >> 8), UInt8(width & 0xFF), UInt8(height >> 8), UInt8(height & 0xFF)]
        bytes.append(UInt8(colors.count))
        for color in colors { bytes += [color.red, color.green, color.blue, color.alpha] }
        return Data(bytes)
    }

    /// True for data starting with `TIMG`.
    public func canDecode(_ data: Data) -> Bool { data.starts(with: Array("TIMG".utf8)) }

    /// Header-only size.
    public func probe(_ data: Data) -> ImageProperties? {
        let bytes = [UInt8](data.prefix(9))
        guard bytes.count == 9, canDecode(data) else { return nil }
        return ImageProperties(
            format: .testImage, width: Int(bytes[4]) << 8 | Int(bytes[5]), height: Int(bytes[6]) << 8 | Int(bytes[7]),
            frameCount: Int(bytes[8]))
    }

    /// Decodes (after the configured delay), allocating pixels only after the header passed the budget.
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        hook.fire(.decode)
        state.withLock {
            $0.decodeCount += 1
            $0.runningDecodes += 1
            $0.maxConcurrentDecodes = max($0.maxConcurrentDecodes, $0.runningDecodes)
        }
        defer { state.withLock { $0.runningDecodes -= 1 } }
        gate.lock()
        while gateClosed.value { gate.wait() }
        gate.unlock()
        if decodeDelay > 0 { Thread.sleep(forTimeInterval: decodeDelay) }
        if let failure { throw failure }
        guard let properties = probe(data), let frames = properties.frameCount, frames > 0,
            data.count >= 9 + frames * 4
        else { throw ImageError(.badImageData, stage: .decode, message: "truncated TIMG") }
        try options.checkPixelBudget(width: properties.width, height: properties.height)
        let size = options.targetSize(forSourceWidth: properties.width, height: properties.height)
        let bytes = [UInt8](data)
        // The animation budget, as the real animated coders honour it: over the frame limit, fail or keep the
        // first frame.
        var count = options.firstFrameOnly ? 1 : frames
        if count > options.animationBudget.maxFrameCount {
            if options.animationBudget.onExceeded == .firstFrameOnly {
                count = 1
            } else {
                try options.animationBudget.checkFrameCount(count)
            }
        }
        let tint = options.coderOptions[Tint.self] ?? 0
        let imageFrames = (0..<count).map { index -> ImageFrame in
            let color = Array(bytes[(9 + index * 4)..<(13 + index * 4)])
            var pixels = [UInt8](repeating: 0, count: size.width * size.height * 4)
            for offset in stride(from: 0, to: pixels.count, by: 4) {
                pixels[offset] = color[0]
                pixels[offset + 1] = color[1] ^ tint
                pixels[offset + 2] = color[2]
                pixels[offset + 3] = color[3]
            }
            return ImageFrame(
                pixels: PixelBuffer(width: size.width, height: size.height, layout: .rgba8, bytes: pixels),
                duration: count > 1 ? 0.1 : 0)
        }
        return Image(
            frames: imageFrames, format: .testImage,
            metadata: ImageMetadata(sourcePixelWidth: properties.width, sourcePixelHeight: properties.height))
    }

    /// True for the test format.
    public func canEncode(to format: ImageFormat) -> Bool { format == .testImage }

    /// The test format stores pixels as they are.
    public func encodesExactly(to format: ImageFormat) -> Bool { format == .testImage }

    /// Encodes the first pixel of each frame as that frame's colour.
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        state.withLock { $0.encodeCount += 1 }
        let colors = image.frames.map { frame -> RGBAColor in
            let pixel = frame.pixels.pixel(x: 0, y: 0)
            let bytes = Array(pixel) + [255, 255, 255, 255]
            return RGBAColor(red: bytes[0], green: bytes[1], blue: bytes[2], alpha: bytes[3])
        }
        return Self.data(width: image.width, height: image.height, colors: colors)
    }
}

/// A transformer that scales a test image to a fixed size (by repeating the first pixel) and counts its calls.
public final class TestTransformer: Transformer, Sendable {
    /// The stable key.
    public let transformerKey: String
    /// The output size.
    public let size: PixelSize
    private let calls = Locked(0)
    private let fails: Bool
    /// Called at ``TestStage/transform``.
    public let hook = StageHook()

    /// Creates a transformer producing `width` x `height`.
    public init(width: Int, height: Int, fails: Bool = false) {
        size = PixelSize(width: width, height: height)
        transformerKey = "test-resize(\(width)x\(height))"
        self.fails = fails
    }

    /// Calls so far.
    public var callCount: Int { calls.value }

    /// Returns an image of ``size`` filled with the source's first pixel, one frame per source frame.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        hook.fire(.transform)
        calls.withLock { $0 += 1 }
        if fails { throw ImageError(.transformFailed, stage: .transform, message: "TestTransformer told to fail") }
        let frames = image.frames.map { frame -> ImageFrame in
            let first = Array(frame.pixels.pixel(x: 0, y: 0))
            let rgba = first.count == 4 ? first : [first[0], first[0], first[0], 255]
            var bytes = [UInt8]()
            bytes.reserveCapacity(size.width * size.height * 4)
            for _ in 0..<(size.width * size.height) { bytes += rgba }
            return ImageFrame(
                pixels: PixelBuffer(width: size.width, height: size.height, layout: .rgba8, bytes: bytes),
                duration: frame.duration)
        }
        return image.with(frames: frames)
    }
}

extension TestCoder {
    /// Incremental decoding of the test format: once the header and the first frame's colour arrived, a partial
    /// image of the declared size; once final, the full decode.
    public func canIncrementallyDecode(_ data: Data) -> Bool { data.count < 4 || canDecode(data) }

    /// A decoder over a growing prefix.
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        TestIncrementalDecoder(coder: self, options: options)
    }
}

/// The incremental decoder of ``TestCoder``.
final class TestIncrementalDecoder: IncrementalImageDecoder {
    private let coder: TestCoder
    private let options: ImageDecodeOptions
    private var data = Data()
    private var isFinal = false

    init(coder: TestCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
    }

    func update(_ data: Data, isFinal: Bool) {
        self.data = data
        self.isFinal = isFinal
    }

    func currentImage() throws -> Image? {
        if isFinal { return try coder.decode(data, options: options) }
        guard data.count >= 13, let properties = coder.probe(data) else { return nil }
        // The whole decode's options, as the final image gets them: budget, size, the tint.
        try options.checkPixelBudget(width: properties.width, height: properties.height)
        let size = options.targetSize(forSourceWidth: properties.width, height: properties.height)
        let bytes = [UInt8](data)
        let tint = options.coderOptions[TestCoder.Tint.self] ?? 0
        let color = [bytes[9], bytes[10] ^ tint, bytes[11], bytes[12]]
        let pixels = [UInt8](repeating: 0, count: size.width * size.height * 4).enumerated().map {
            color[$0.offset % 4]
        }
        return Image(
            pixels: PixelBuffer(width: size.width, height: size.height, layout: .rgba8, bytes: pixels),
            format: .testImage,
            metadata: ImageMetadata(
                sourcePixelWidth: properties.width, sourcePixelHeight: properties.height, isPartial: true))
    }
}
