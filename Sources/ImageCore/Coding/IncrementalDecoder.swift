import Foundation

/// The incremental decoder every built-in coder returns: one scaffold around a format's
/// ``IncrementalDecoderStep``.
///
/// What it does for every format, so a coder writes none of it:
/// - keeps the bytes (each ``update(_:isFinal:)`` hands over the whole prefix so far);
/// - before the bytes are final, asks the step for a preview only when new bytes arrived and the step's
///   ``IncrementalDecoderStep/progress(in:)`` passed the last preview's (a new scan, a geometric share of bytes),
///   and hands out the last preview in between;
/// - checks the header's size (``IncrementalDecoderStep/header(in:)``) against the pixel budget before the first
///   preview, so no step allocates for an image over budget; an `imageTooLarge` from the header or a preview is
///   rethrown by every later call before the final one;
/// - marks every preview ``ImageMetadata/isPartial`` (and never ``ImageMetadata/isIncomplete``), even one made
///   from the whole file before the caller said it is final;
/// - stops the previews after a preview error other than `imageTooLarge` (the final decode reports what is wrong);
/// - once the bytes are final, returns the step's full decode (the coder's `decode`), computed once, so the final
///   image equals a one-shot decode of the same bytes — flagged ``ImageMetadata/isIncomplete`` by the coder when
///   those bytes end before the image does;
/// - throws only ``ImageError`` (another error becomes `badImageData` at the decode stage).
///
/// Not thread-safe: one owner drives it from one thread at a time, as ``IncrementalImageDecoder`` requires.
public final class IncrementalDecoder: IncrementalImageDecoder {
    private let step: any IncrementalDecoderStep
    private let options: ImageDecodeOptions
    private var data = Data()
    private var isFinal = false
    private var final: Result<Image, ImageError>?
    /// The budget verdict every preview call repeats once it was reached.
    private var overBudget: ImageError?
    private var headerChecked = false
    private var previewsEnded = false
    /// Bytes held at the last look at the prefix; nothing is decoded again until there are more.
    private var lookedAt = -1
    private var preview: Image?
    /// The step's progress when ``preview`` was made.
    private var previewUnits = 0

    /// Creates a decoder for one image's bytes, decoding with `options` through `step`.
    public init(options: ImageDecodeOptions, step: some IncrementalDecoderStep) {
        self.options = options
        self.step = step
    }

    /// Hands over every byte received so far (a growing prefix of the file) and whether they are all.
    public func update(_ data: Data, isFinal: Bool) {
        self.data = data
        self.isFinal = isFinal
    }

    /// The final image once the bytes are final; before that the latest preview (nil when none yet).
    ///
    /// - Throws: ``ImageError``: the final decode's error, or `imageTooLarge` when the header or a preview
    ///   found the image over budget.
    public func currentImage() throws(ImageError) -> Image? {
        if isFinal { return try finalImage() }
        if let overBudget { throw overBudget }
        guard !previewsEnded, data.count > lookedAt else { return preview }
        lookedAt = data.count
        do {
            if !headerChecked {
                guard let size = try step.header(in: data) else { return preview }
                try options.checkPixelBudget(width: size.width, height: size.height)
                headerChecked = true
            }
            guard let progress = step.progress(in: data), progress.warrantsPreview(after: previewUnits) else {
                return preview
            }
            switch try step.preview(of: data) {
            case .nothingNew:
                break
            case .image(let image):
                preview = Self.markedPartial(image)
                previewUnits = progress.units
            case .finished(let image):
                if let image { preview = Self.markedPartial(image) }
                previewsEnded = true
            }
            return preview
        } catch {
            let failure = ImageError.wrap(error, as: .badImageData, stage: .decode)
            if failure.code == .imageTooLarge {
                overBudget = failure
                throw failure
            }
            // A preview that fails is no preview; the final decode reports what is wrong with the file.
            previewsEnded = true
            return preview
        }
    }

    private func finalImage() throws(ImageError) -> Image {
        if final == nil {
            do {
                final = .success(try step.decodeFinal(data))
            } catch {
                final = .failure(ImageError.wrap(error, as: .badImageData, stage: .decode))
            }
        }
        return try final!.get()
    }

    /// `image` marked as a preview: partial, and not a final image of incomplete bytes.
    private static func markedPartial(_ image: Image) -> Image {
        guard !image.metadata.isPartial || image.metadata.isIncomplete else { return image }
        var metadata = image.metadata
        metadata.isPartial = true
        metadata.isIncomplete = false
        return image.with(metadata: metadata)
    }
}
