internal import CAVIF
import ImageCore

/// Turns the frames of one parsed AVIF into ``ImageFrame``s at the size the options ask for: decode, convert to
/// RGB(A), apply `clap` / `irot` / `imir` (unless raw pixels were asked for), then the shared area resampler for
/// thumbnails. Owns its ``AVIFDecoderHandle``.
///
/// Not thread-safe: one decode call, or under the lock of ``AVIFAnimatedProvider``.
final class AVIFFrameReader {
    let handle: AVIFDecoderHandle
    let transforms: AVIFTransforms
    let applyTransforms: Bool
    /// The stored size of every frame (the first decoded frame's).
    private(set) var storedSize: PixelSize
    /// The size frames come out at.
    private(set) var target: PixelSize
    private let options: ImageDecodeOptions
    /// The strips of the last reduced frame (nil while every frame decoded at full size); for tests.
    private(set) var lastStripReport: AVIFStripReport?

    init(handle: AVIFDecoderHandle, options: ImageDecodeOptions) {
        self.handle = handle
        self.options = options
        transforms = AVIFTransforms(handle.image)
        applyTransforms = options.applyOrientation
        storedSize = handle.size
        let shown = applyTransforms ? transforms.displayedSize(of: handle.size) : handle.size
        target = options.targetSize(forSourceWidth: shown.width, height: shown.height)
    }

    /// Frames in the file.
    /// The frames this reader serves: only the first when it was opened for the first frame (by the caller, or by
    /// the ``AnimationBudget/Policy/firstFrameOnly`` policy of a sequence over budget).
    var frameCount: Int { options.firstFrameOnly ? min(1, handle.frameCount) : handle.frameCount }

    /// Decodes frame `index`. Throws `badImageData` when the frame is corrupt or its size differs from the first
    /// frame's, `imageTooLarge` when the AV1 stream declares a size over the budget.
    func frame(at index: Int, duration: Double) throws(ImageError) -> ImageFrame {
        try handle.decodeFrame(index)
        let decoded = PixelSize(width: Int(handle.image.pointee.width), height: Int(handle.image.pointee.height))
        try options.checkPixelBudget(width: decoded.width, height: decoded.height)
        if index == 0 && decoded != storedSize {
            // The AV1 sequence header is the truth for the planes; follow it for the canvas of every frame.
            storedSize = decoded
            let shown = applyTransforms ? transforms.displayedSize(of: decoded) : decoded
            target = options.targetSize(forSourceWidth: shown.width, height: shown.height)
        } else if decoded != storedSize {
            throw ImageError(
                .badImageData, stage: .decode,
                message: "AVIF frame \(index) is \(decoded), the sequence is \(storedSize)")
        }
        return ImageFrame(pixels: try pixels(), duration: duration)
    }

    /// The decoded frame as shown (or stored), at ``target``: converted in strips and reduced on the way when
    /// smaller (then turned upright: the area average commutes with turns and mirrors), else converted whole.
    private func pixels() throws(ImageError) -> PixelBuffer {
        let crop = applyTransforms ? transforms.effectiveCrop(in: storedSize) : nil
        let turned = applyTransforms && transforms.orientation.swapsDimensions
        let cropped = crop.map { PixelSize(width: $0.width, height: $0.height) } ?? storedSize
        let produced = turned ? PixelSize(width: cropped.height, height: cropped.width) : cropped
        guard target != produced else {
            var pixels = try AVIFPixels.convert(handle.image, hasAlpha: handle.hasAlpha)
            if applyTransforms && !transforms.isIdentity { pixels = transforms.apply(to: pixels) }
            return pixels
        }
        let stored = turned ? PixelSize(width: target.height, height: target.width) : target
        let (pixels, report) = try AVIFStripReducer.convert(
            handle.image, hasAlpha: handle.hasAlpha, crop: crop, target: stored)
        lastStripReport = report
        return applyTransforms ? pixels.oriented(transforms.orientation) : pixels
    }

    /// ICC profile and EXIF from the container (read after the first frame decode, when libavif has filled them).
    func metadata(isPartial: Bool = false) -> ImageMetadata {
        let image = handle.image.pointee
        let icc = image.icc.size > 0 ? Array(UnsafeBufferPointer(start: image.icc.data, count: image.icc.size)) : nil
        var exif =
            image.exif.size > 0 ? Array(UnsafeBufferPointer(start: image.exif.data, count: image.exif.size)) : nil
        // libavif keeps the bytes after the Exif item's 4-byte header offset; some writers put "Exif\0\0" there.
        if let bytes = exif, bytes.starts(with: [0x45, 0x78, 0x69, 0x66, 0, 0]) { exif = Array(bytes.dropFirst(6)) }
        return ImageMetadata(
            orientation: applyTransforms ? .up : transforms.orientation, sourceOrientation: transforms.orientation,
            iccProfile: icc, exif: exif, sourcePixelWidth: storedSize.width, sourcePixelHeight: storedSize.height,
            isPartial: isPartial)
    }
}
