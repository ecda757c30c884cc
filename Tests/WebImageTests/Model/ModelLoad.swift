import Foundation
import ImageTestSupport
import WebImage

/// One load's random inputs: the options and context it runs with, the catalog entries it drew, and when it starts,
/// is cancelled or reprioritized.
struct LoadSpec: CustomStringConvertible {
    var url: URL
    var options: ImageOptions = []
    var context = ImageContext()
    /// Stored options drawn field by field; folded into the context by ``finish()``.
    var decode: ImageDecodeOptions?
    var encode: ImageEncodeOptions?
    /// The catalog entries this load drew (``OptionCatalog/Entry/id``), and what each drew, for messages.
    var drawn: [String] = []
    var notes: [String] = []
    /// Seconds after the wave began that the load starts.
    var startDelay = 0.0
    /// ``LoadControl/cancelLoad``: seconds after its start that the load is cancelled.
    var cancelAfter: Double?
    /// ``LoadControl/priority``: seconds after its start that its priority changes, and to what.
    var priorityChange: (after: Double, to: ImageLoadPriority)?
    /// The load goes through an `ImageTarget` of the wave (index) under this operation key (nil: the default).
    var target: (index: Int, key: String?)?
    /// Which manager of the fleet runs it.
    var replica = 0
    /// The load is a data load (`ImageManager.loadData`): the loader's bytes, with its options and context.
    var dataOnly = false

    init(url: URL) { self.url = url }

    var partition: String? { context.cachePartitionKey }
    /// The deadline the origin honours for this load (``ModelOrigin/cookieDeadline`` only with `.handleCookies`).
    var deadline: Double? { ModelOrigin.deadline(options: options, context: context) }

    /// True when the load has no option at all.
    var isPlain: Bool { options.isEmpty && drawn.isEmpty }

    /// Folds the stored options into the context (after every draw).
    mutating func finish() {
        if let decode { context.imageDecodeOptions = decode }
        if let encode { context.imageEncodeOptions = encode }
    }

    /// The decode options the load's options and context give, by the documented rule (`ImageDecodeOptions` in the
    /// context, then the context's thumbnail keys, scale-down limit and scale factor, then the flags).
    var decodeOptions: ImageDecodeOptions {
        var decode = context.imageDecodeOptions ?? ImageDecodeOptions()
        if let thumbnail = context.imageThumbnailPixelSize { decode.thumbnailPixelSize = thumbnail }
        if let preserve = context.imagePreserveAspectRatio { decode.preserveAspectRatio = preserve }
        if options.contains(.scaleDownLargeImages) {
            decode.scaleDownLimitBytes = context.imageScaleDownLimitBytes ?? 60 << 20
        }
        if options.contains(.decodeFirstFrameOnly) { decode.firstFrameOnly = true }
        if options.contains(.preloadAllFrames) { decode.preloadAllFrames = true }
        if let scale = context.imageScaleFactor { decode.scaleFactor = scale }
        return decode
    }

    var description: String {
        var text = "\(dataOnly ? "data " : "")\(url.lastPathComponent) [\(notes.joined(separator: ", "))]"
        if let cancelAfter { text += " cancel@\(cancelAfter)" }
        if let priorityChange { text += " priority→\(priorityChange.to)@\(priorityChange.after)" }
        if let target { text += " target \(target.index)/\(target.key ?? "-")" }
        if replica != 0 { text += " replica \(replica)" }
        return text
    }
}

extension OptionCatalog.Entry {
    /// "kind name", the model's name of the entry.
    var id: String { "\(kind.rawValue) \(name)" }
}

/// One load's deliveries, counted.
final class LoadRecord: Sendable {
    private struct State {
        var start = Date()
        var end: Date?
        var final: Result<ImageResult, ImageError>?
        /// A data load's bytes (its failure is ``final``).
        var data: ImageDataResult?
        var finals = 0
        var previews: [Image] = []
        var cachedFirst: ImageResult?
        var cancelled = false
        var displayed: Image?
    }

    private let state = Locked(State())

    func start() { state.withLock { $0.start = Date() } }

    func deliver(_ result: Result<ImageResult, ImageError>) {
        if case .success(let loaded) = result, !loaded.isFinal {
            state.withLock { state in
                if loaded.cacheType == .none { state.previews.append(loaded.image) } else { state.cachedFirst = loaded }
            }
            return
        }
        state.withLock { state in
            state.finals += 1
            if state.final == nil {
                state.final = result
                state.end = Date()
            }
        }
    }

    /// A data load's one completion: its bytes, or its failure as ``summary``'s result.
    func deliverData(_ result: Result<ImageDataResult, ImageError>) {
        state.withLock { state in
            state.finals += 1
            guard state.final == nil, state.data == nil else { return }
            switch result {
            case .success(let loaded): state.data = loaded
            case .failure(let error): state.final = .failure(error)
            }
            state.end = Date()
        }
    }

    /// A data load's bytes, when it got them.
    var data: ImageDataResult? { state.withLock { $0.data } }

    /// `cancel()` took effect (the final result was not decided before it).
    func cancelTookEffect(_ effective: Bool) { if effective { state.withLock { $0.cancelled = true } } }

    var finals: Int { state.withLock { $0.finals } }
    var previews: [Image] { state.withLock { $0.previews } }
    var cachedFirst: ImageResult? { state.withLock { $0.cachedFirst } }
    var startedAt: Date { state.withLock { $0.start } }
    var endedAt: Date { state.withLock { $0.end ?? Date() } }

    /// The final result, when the load started and ended (now if it has not), and whether a cancel took effect.
    var summary: (Result<ImageResult, ImageError>?, Date, Date, Bool) {
        state.withLock { ($0.final, $0.start, $0.end ?? Date(), $0.cancelled) }
    }

    func waitForFinal(timeout: TimeInterval) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if finals > 0 { return true }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return finals > 0
    }
}
