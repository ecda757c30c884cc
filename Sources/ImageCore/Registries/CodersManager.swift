import Foundation
import Synchronization

/// The registry of coders, itself a coder: it asks its coders in priority order and uses the first that can.
///
/// Priority: the coder added **last** is asked **first** (SDWebImage's `SDImageCodersManager` order), so a coder
/// you register overrides a built-in one for the same bytes. ImageCore registers no coders; plugins are added at
/// runtime (`CodersManager.shared.addCoder(PNGCoder.shared)`).
///
/// Before decoding, the manager probes the header with the chosen coder and refuses images over the pixel
/// budget (``ImageError/Code/imageTooLarge``) before the coder allocates anything.
///
/// Thread-safe: the list sits behind a `Mutex`; every call works on a snapshot, so coders run without the lock.
public final class CodersManager: ProgressiveImageCoder, AnimatedImageCoder, ReportingImageCoder, Sendable {
    private let storage: Mutex<[any ImageCoder]>

    /// The process-wide registry the manager uses when the context names no coder.
    public static let shared = CodersManager()

    /// Creates a registry holding `coders` (the last one has the highest priority).
    public init(coders: [any ImageCoder] = []) { storage = Mutex(coders) }

    /// The registered coders, lowest priority first.
    public var coders: [any ImageCoder] {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    /// Adds `coder` with the highest priority. Adding a coder of a type already present moves it to the top.
    public func addCoder(_ coder: any ImageCoder) {
        storage.withLock { list in
            list.removeAll { Self.same($0, coder) }
            list.append(coder)
        }
    }

    /// Removes `coder` (matched by identity for classes, by type for values).
    public func removeCoder(_ coder: any ImageCoder) {
        storage.withLock { list in list.removeAll { Self.same($0, coder) } }
    }

    private static func same(_ a: any ImageCoder, _ b: any ImageCoder) -> Bool {
        if type(of: a) is AnyClass, type(of: b) is AnyClass {
            return (a as AnyObject) === (b as AnyObject)
        }
        return ObjectIdentifier(type(of: a)) == ObjectIdentifier(type(of: b))
    }

    /// Coders in the order they are asked (highest priority first).
    private var byPriority: ReversedCollection<[any ImageCoder]> { coders.reversed() }

    // MARK: ImageCoder

    /// True when any coder can decode `data`.
    public func canDecode(_ data: Data) -> Bool { byPriority.contains { $0.canDecode(data) } }

    /// Decodes with the first coder that can, after checking the pixel budget against its header.
    ///
    /// - Throws: `noCoder` when no coder accepts the bytes (`badImageData` for empty data), `imageTooLarge`,
    ///   or the coder's error (non-``ImageError``s are wrapped as `badImageData`).
    public func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        try Self.decodeReportingProperties(data, with: self, options: options).image
    }

    /// Decodes with one coder: budget check from its probe, then decode, wrapping foreign errors.
    public static func decode(_ data: Data, with coder: any ImageCoder, options: ImageDecodeOptions) throws -> Image {
        try decodeReportingProperties(data, with: coder, options: options).image
    }

    /// Decodes with `coder` — for a registry, with the coder it picks — after checking the pixel budget against
    /// that coder's probe, and returns the probed header too (the manager reads the source's frame count).
    static func decodeReportingProperties(
        _ data: Data, with coder: any ImageCoder, options: ImageDecodeOptions
    ) throws(ImageError) -> (image: Image, properties: ImageProperties?) {
        var chosen = coder
        while let registry = chosen as? CodersManager {
            guard !data.isEmpty else { throw ImageError(.badImageData, stage: .decode, message: "empty data") }
            guard let inner = registry.byPriority.first(where: { $0.canDecode(data) }) else {
                let format = ImageFormat.detect(data).map { "\($0)" } ?? "unknown"
                throw ImageError(.noCoder, stage: .decode, message: "no coder decodes \(format) data")
            }
            chosen = inner
        }
        let properties = chosen.probe(data)
        if let properties {
            try options.checkPixelBudget(width: properties.width, height: properties.height)
        }
        do {
            let image = try ColorConversion.apply(to: chosen.decode(data, options: options), options: options)
            return (image, properties)
        } catch {
            throw ImageError.wrap(error, as: .badImageData, stage: .decode)
        }
    }

    /// True when any coder encodes `format`.
    public func canEncode(to format: ImageFormat) -> Bool { byPriority.contains { $0.canEncode(to: format) } }

    /// Encodes with the first coder that can.
    public func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        guard let coder = byPriority.first(where: { $0.canEncode(to: format) }) else {
            throw ImageError(.noCoder, stage: .encode, message: "no coder encodes \(format)")
        }
        do {
            return try coder.encode(image, as: format, options: options)
        } catch {
            throw ImageError.wrap(error, as: .encodeFailed, stage: .encode)
        }
    }

    /// What the coder that would encode `format` (the first that can) promises.
    public func encodesExactly(to format: ImageFormat) -> Bool {
        byPriority.first { $0.canEncode(to: format) }?.encodesExactly(to: format) ?? false
    }

    /// Encodes with the first coder that can, reporting what it chose (``ReportingImageCoder``).
    public func encodeReporting(
        _ image: Image, as format: ImageFormat, options: ImageEncodeOptions
    ) throws -> EncodedImage {
        guard let coder = byPriority.first(where: { $0.canEncode(to: format) }) else {
            throw ImageError(.noCoder, stage: .encode, message: "no coder encodes \(format)")
        }
        do {
            return try coder.encodeWithReport(image, as: format, options: options)
        } catch {
            throw ImageError.wrap(error, as: .encodeFailed, stage: .encode)
        }
    }

    /// The first coder's probe that answers.
    public func probe(_ data: Data) -> ImageProperties? {
        byPriority.first { $0.canDecode(data) }?.probe(data)
    }

    // MARK: ProgressiveImageCoder

    /// True when a progressive coder can decode this prefix incrementally.
    public func canIncrementallyDecode(_ data: Data) -> Bool { progressiveCoder(for: data) != nil }

    /// The progressive coder for `data`, highest priority first.
    public func progressiveCoder(for data: Data) -> (any ProgressiveImageCoder)? {
        for coder in byPriority {
            if let progressive = coder as? any ProgressiveImageCoder, progressive.canIncrementallyDecode(data) {
                return progressive
            }
        }
        return nil
    }

    /// A decoder that picks its coder once enough bytes arrived to recognise the format.
    public func makeIncrementalDecoder(options: ImageDecodeOptions) -> any IncrementalImageDecoder {
        DeferredIncrementalDecoder(pick: { [self] data in progressiveCoder(for: data) }, options: options)
    }

    /// An incremental decoder of `coder` (a load's own, named in its context) under the same contract as the
    /// registry's: previews only when marked partial, and the steps every decode gets after the coder (colour
    /// conversion), so a preview never differs from the final image in anything but completeness.
    static func makeIncrementalDecoder(
        with coder: any ProgressiveImageCoder, options: ImageDecodeOptions
    ) -> any IncrementalImageDecoder {
        DeferredIncrementalDecoder(
            pick: { data in coder.canIncrementallyDecode(data) ? coder : nil }, options: options)
    }

    // MARK: AnimatedImageCoder

    /// Opens an animation with the first animated coder that decodes `data`.
    public func makeAnimatedProvider(for data: Data, options: ImageDecodeOptions) throws -> any AnimatedImageProvider {
        for coder in byPriority where coder.canDecode(data) {
            if let animated = coder as? any AnimatedImageCoder {
                return try animated.makeAnimatedProvider(for: data, options: options)
            }
        }
        throw ImageError(.noCoder, stage: .decode, message: "no animated coder for this data")
    }
}

/// Chooses a progressive coder once the format can be recognised, then delegates to it.
///
/// Enforces the preview contract for every coder, including third-party ones: before the bytes are final an
/// image is only passed on when it is marked ``ImageMetadata/isPartial``; a complete-looking decode of a prefix
/// (a coder that saw the end marker early) is not a preview, and the final decode follows once `isFinal`.
final class DeferredIncrementalDecoder: IncrementalImageDecoder {
    private let pick: (Data) -> (any ProgressiveImageCoder)?
    private let options: ImageDecodeOptions
    private var inner: (any IncrementalImageDecoder)?
    private var gaveUp = false
    private var isFinal = false

    init(pick: @escaping (Data) -> (any ProgressiveImageCoder)?, options: ImageDecodeOptions) {
        self.pick = pick
        self.options = options
    }

    func update(_ data: Data, isFinal: Bool) {
        if inner == nil && !gaveUp {
            if let coder = pick(data) {
                inner = coder.makeIncrementalDecoder(options: options)
            } else if data.count >= 64 || isFinal {
                gaveUp = true
            }
        }
        self.isFinal = isFinal
        inner?.update(data, isFinal: isFinal)
    }

    func currentImage() throws -> Image? {
        guard let image = try inner?.currentImage() else { return nil }
        return isFinal || image.metadata.isPartial ? try ColorConversion.apply(to: image, options: options) : nil
    }
}
