import ImageCore

/// Resizes an image to a pixel size with a high-quality separable filter.
///
/// Modes: ``Mode/fill`` stretches to exactly `size`; ``Mode/aspectFit`` scales uniformly to fit inside `size`
/// (the result may be smaller on one axis); ``Mode/aspectFill`` scales uniformly to cover `size` and crops the
/// centre (the crop is folded into the filter windows, nothing outside it is filtered). Images are scaled up as
/// well as down.
///
/// Quality: resampling happens in premultiplied alpha (straight pixels are premultiplied on load and
/// un-premultiplied on store), so transparent pixels never bleed dark fringes into edges. Weights are computed
/// once per axis in `Double` and applied as `Float`.
///
/// Large reductions (the area-average rule): on each axis reduced by a factor `s ≥ 4` with ``ResizeFilter/lanczos3``
/// or ``ResizeFilter/catmullRom``, source pixels are first averaged over boxes of the integer factor
/// `k = ⌊s / 2⌋` (at most 128), leaving the filter a reduction of `2 ≤ s / k < 3`. This is the rule vips applies
/// with its default gap of 2: indistinguishable from filtering the whole way, and it reads each source pixel once.
/// Boxes are summed in integers on the fly while streaming rows (SIMD widening adds, like vips' `shrink`), never
/// stored as a whole image; only each box's mean becomes a float.
///
/// Layouts: the result has the layout and alpha mode of the input (gray stays gray, RGB stays RGB). Animated
/// images: every frame is resized (see `FrameMapper`). Threading: thread-safe; large frames are processed in
/// parallel stripes with `DispatchQueue.concurrentPerform`. Errors: ``/ImageCore/ImageError`` `transformFailed` for an
/// empty target or source, `imageTooLarge` for a result beyond 2^28 pixels.
///
/// Key: `resize(<w>x<h>,<mode>,<filter>)`, e.g. `resize(256x256,aspectFit,lanczos3)`.
public struct ResizeTransformer: Transformer {
    /// How the image is fitted to the target size.
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        /// Stretch to exactly the target size, ignoring the aspect ratio.
        case fill
        /// Scale uniformly so the whole image fits inside the target; one side may come out shorter.
        case aspectFit
        /// Scale uniformly so the image covers the target, then crop the centre to exactly the target.
        case aspectFill
    }

    /// The target size in pixels.
    public let size: PixelSize
    /// How the image is fitted to ``size``.
    public let mode: Mode
    /// The resampling filter.
    public let filter: ResizeFilter

    /// Creates a resize to `size` pixels.
    public init(size: PixelSize, mode: Mode = .aspectFit, filter: ResizeFilter = .lanczos3) {
        self.size = size
        self.mode = mode
        self.filter = filter
    }

    /// Creates a resize to `width × height` pixels.
    public init(width: Int, height: Int, mode: Mode = .aspectFit, filter: ResizeFilter = .lanczos3) {
        self.init(size: PixelSize(width: width, height: height), mode: mode, filter: filter)
    }

    /// `resize(<w>x<h>,<mode>,<filter>)`.
    public var transformerKey: String { "resize(\(size.width)x\(size.height),\(mode.rawValue),\(filter.rawValue))" }

    /// Resizes every frame.
    ///
    /// - Throws: ``/ImageCore/ImageError`` (`transformFailed`, `imageTooLarge`, or a frame's decode error).
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        try FrameMapper.map(image, outputSize: outputSize(for: PixelSize(width: image.width, height: image.height))) {
            try resize($0)
        }
    }

    /// The size of the result for an input of `input` pixels.
    public func outputSize(for input: PixelSize) -> PixelSize {
        let plan = ResizePlan(input: input, target: size, mode: mode)
        return PixelSize(width: plan.outputWidth, height: plan.outputHeight)
    }

    /// Resizes one buffer.
    func resize(_ pixels: PixelBuffer) throws -> PixelBuffer {
        guard size.width > 0, size.height > 0 else {
            throw PixelStorage.invalid("resize: target size \(size) is empty")
        }
        guard pixels.width > 0, pixels.height > 0 else {
            throw PixelStorage.invalid("resize: source image is empty (\(pixels.width)x\(pixels.height))")
        }
        let plan = ResizePlan(input: PixelSize(width: pixels.width, height: pixels.height), target: size, mode: mode)
        try PixelStorage.validate(width: plan.outputWidth, height: plan.outputHeight, what: "resize")
        if plan.isIdentity(width: pixels.width, height: pixels.height) { return pixels }
        let kx = Self.boxFactor(scale: plan.spanX / Double(plan.outputWidth), filter: filter)
        let ky = Self.boxFactor(scale: plan.spanY / Double(plan.outputHeight), filter: filter)
        return pixels.withUnsafeBytes { bytes in
            let source = ResampleSource(
                base: bytes.baseAddress!, bytesPerRow: pixels.bytesPerRow, width: pixels.width,
                height: pixels.height, codec: RowCodec(pixels), kx: kx, ky: ky, layout: pixels.layout,
                alphaMode: pixels.alphaMode)
            let wx = ResampleWeights(
                inputSize: source.servedWidth, start: plan.startX / Double(kx), span: plan.spanX / Double(kx),
                outputSize: plan.outputWidth, filter: filter)
            let wy = ResampleWeights(
                inputSize: source.servedHeight, start: plan.startY / Double(ky), span: plan.spanY / Double(ky),
                outputSize: plan.outputHeight, filter: filter)
            return SeparableResampler.run(
                source: source, wx: wx, wy: wy, layout: pixels.layout, alphaMode: pixels.alphaMode)
        }
    }

    /// The integer area-average factor applied before filtering an axis reduced by `scale` (see the type docs).
    static func boxFactor(scale: Double, filter: ResizeFilter) -> Int {
        guard filter != .box, scale >= 4 else { return 1 }
        return min(Int(scale / 2), 128)
    }
}

/// Output size and source window of a resize.
struct ResizePlan {
    /// Result width.
    let outputWidth: Int
    /// Result height.
    let outputHeight: Int
    /// Left edge of the source window, in source pixels.
    let startX: Double
    /// Width of the source window.
    let spanX: Double
    /// Top edge of the source window.
    let startY: Double
    /// Height of the source window.
    let spanY: Double

    init(input: PixelSize, target: PixelSize, mode: ResizeTransformer.Mode) {
        let w = Double(input.width)
        let h = Double(input.height)
        let tw = Double(target.width)
        let th = Double(target.height)
        guard input.width > 0, input.height > 0, target.width > 0, target.height > 0 else {
            // Nothing to scale (``ResizeTransformer/resize(_:)`` refuses these); no division by zero below.
            outputWidth = max(0, target.width)
            outputHeight = max(0, target.height)
            (startX, spanX, startY, spanY) = (0, max(0, w), 0, max(0, h))
            return
        }
        switch mode {
        case .fill:
            outputWidth = target.width
            outputHeight = target.height
            (startX, spanX, startY, spanY) = (0, w, 0, h)
        case .aspectFit:
            let scale = min(tw / w, th / h)
            outputWidth = Self.side(w * scale, limit: target.width)
            outputHeight = Self.side(h * scale, limit: target.height)
            (startX, spanX, startY, spanY) = (0, w, 0, h)
        case .aspectFill:
            let scale = max(tw / w, th / h)
            outputWidth = target.width
            outputHeight = target.height
            let cropW = min(w, tw / scale)
            let cropH = min(h, th / scale)
            (startX, spanX, startY, spanY) = ((w - cropW) / 2, cropW, (h - cropH) / 2, cropH)
        }
    }

    /// `value` rounded, between 1 and `limit`, converted without trapping (`limit` may be near `Int.max`).
    static func side(_ value: Double, limit: Int) -> Int {
        guard value.isFinite, value < Double(limit) else { return limit }
        return max(1, Int(value.rounded()))
    }

    /// True when the result would equal the source pixel for pixel.
    func isIdentity(width: Int, height: Int) -> Bool {
        outputWidth == width && outputHeight == height && startX == 0 && startY == 0 && spanX == Double(width)
            && spanY == Double(height)
    }
}
