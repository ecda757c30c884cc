import Dispatch
import Foundation
import ImageTestSupport
import WebImage

/// What the programs of the main-line model and the cases of the non-interference property share: the real image
/// files an origin serves, the coders, and the strategies an option can name (a second cache, a loader of the
/// load's own, serializers, key filters, a callback queue), made once per program so loads that name the same
/// instance may coalesce.
final class ModelWorld: Sendable {
    /// The URLs of the test format (flat colours, one or three frames) and of real files with ICC profiles.
    static let testURLs = ["a.timg", "b.timg", "anim-c.timg", "anim-d.timg"].map { URL(string: "test://model/\($0)")! }
    static let colorURLs = ["color-1.jpg", "color-2.png"].map { URL(string: "test://model/\($0)")! }
    static let urls = testURLs + colorURLs

    let origin: ModelOrigin
    /// The manager's coders; the reference decodes with a registry of the same coders.
    let coders: CodersManager
    let referenceCoders: CodersManager
    /// The caches and loader a context may name instead of the manager's.
    let sideCache: CachesManager
    let sideOriginalCache: CachesManager
    let ownLoader: ForwardingLoader
    /// Serializers a context may name: exact PNG bytes, and none (nothing stored on disk for a derived key).
    let pngSerializer: BlockCacheSerializer
    let nilSerializer: BlockCacheSerializer
    let callbackQueue = DispatchQueue(label: "model.callbacks")
    /// Every encode options a load set in this program, by URL and partition: a derived key's disk entry may hold
    /// their encoding of the image (what the default serializer documents).
    private let encodes = Locked<[String: Set<ImageEncodeOptions>]>([:])

    init(origin: ModelOrigin) {
        self.origin = origin
        coders = CodersManager(coders: [PNGCoder.shared, JPEGCoder.shared, TestCoder()])
        referenceCoders = CodersManager(coders: [PNGCoder.shared, JPEGCoder.shared, TestCoder()])
        sideCache = CachesManager([MemoryCache()])
        sideOriginalCache = CachesManager([MemoryCache()])
        ownLoader = ForwardingLoader(origin)
        pngSerializer = BlockCacheSerializer { image, _, _ in
            try? PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions(effort: .fast, lossless: true))
        }
        nilSerializer = BlockCacheSerializer { _, _, _ in nil }
    }

    /// An origin serving the model's files (``ModelFixtures``).
    static func makeOrigin() -> ModelOrigin { ModelOrigin(fixtures: ModelFixtures.files) }

    func noteEncode(_ options: ImageEncodeOptions, url: URL, partition: String?) {
        _ = encodes.withLock { $0[url.absoluteString + " " + (partition ?? "-"), default: []].insert(options) }
    }

    func encodesUsed(url: URL, partition: String?) -> Set<ImageEncodeOptions> {
        encodes.withLock { $0[url.absoluteString + " " + (partition ?? "-")] ?? [] }
    }
}

/// The real files the origin serves: the colour-management fixtures the project made (Adobe RGB, Display P3 and
/// CMYK with and without a profile), and a progressive re-encode of the Adobe RGB one with its profile (so previews
/// have scans to show).
enum ModelFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../ColorManagementTests/Fixtures").standardizedFileURL

    static let files: [String: [Data]] = {
        func read(_ name: String) -> Data {
            guard let data = try? Data(contentsOf: directory.appendingPathComponent(name)) else {
                fatalError("model fixture \(name) missing in \(directory.path)")
            }
            return data
        }
        let adobe = read("adobergb.jpg")
        var progressive = adobe
        if let decoded = try? JPEGCoder.shared.decode(adobe, options: ImageDecodeOptions()),
            let profile = decoded.metadata.iccProfile,
            let encoded = try? JPEGCoder.shared.encode(
                Image(pixels: decoded.pixels, format: .jpeg, metadata: ImageMetadata(iccProfile: profile)), as: .jpeg,
                options: ImageEncodeOptions(quality: 0.9, progressive: true))
        {
            progressive = encoded
        }
        return [
            "color-1.jpg": [read("cmyk-adobe.jpg"), adobe, read("cmyk-plain.jpg"), progressive],
            "color-2.png": [read("p3.png")],
        ]
    }()
}

/// A loader of a load's own (``ImageContextOption/imageLoader``): the same origin behind another instance.
final class ForwardingLoader: ImageLoader, Sendable {
    let origin: ModelOrigin
    init(_ origin: ModelOrigin) { self.origin = origin }

    func canRequestImage(for url: URL) -> Bool { origin.canRequestImage(for: url) }

    func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        origin.requestImage(with: url, options: options, context: context, progress: progress, completion: completion)
    }

    func transferKey(for url: URL, options: ImageOptions, context: ImageContext) -> String {
        origin.transferKey(for: url, options: options, context: context)
    }

    func downloadControl(for url: URL) -> DownloadControl? { origin.downloadControl(for: url) }
}

/// What a delivered image is, for comparison: size, frames, and a hash of every frame's pixels as straight RGBA
/// (so the same pixels compare equal whatever layout a coder returned).
struct Signature: Hashable, CustomStringConvertible {
    var width: Int
    var height: Int
    var frames: Int
    var pixels: UInt64

    init(_ image: Image) {
        width = image.width
        height = image.height
        // Every frame, also those a lazily decoded animation doesn't hold yet.
        frames = image.frameCount
        var hash = FNV()
        for index in 0..<image.frameCount {
            if let frame = try? image.frame(at: index) { hash.add(frame.pixels.straightRGBABytes()) }
        }
        pixels = hash.value
    }

    var description: String { "\(width)x\(height)x\(frames) #\(String(pixels, radix: 16).prefix(6))" }
}

/// An image shown by `ImageTarget.setImage`, as the model sees it.
final class ModelTarget: ImageTarget, Sendable {
    let imageTargetState = ImageTargetState()
    private let shown = Locked<Image?>(nil)

    func display(_ image: Image?) { shown.withLock { $0 = image } }

    var displayed: Image? { shown.value }

    /// The placeholder every target load shows (a 1×1 magenta pixel).
    static let placeholder = Image(
        pixels: PixelBuffer(width: 1, height: 1, layout: .rgba8, bytes: [255, 0, 255, 255]), format: .png)
}
