internal import CJXL
import Foundation
import ImageCore

/// Turns the frames of one JPEG XL file into ``ImageFrame``s at the size the options ask for: decode to 8 bits
/// (libjxl coalesces animation frames to the canvas), apply the orientation unless raw pixels were asked for
/// (``PixelBuffer/oriented(_:)``, as the JPEG and AVIF coders do), then the shared area resampler for thumbnails.
/// Owns its ``JXLDecoderHandle``.
///
/// Frames requested in order cost one frame decode each; a later frame skips the ones between
/// (`JxlDecoderSkipFrames`), an earlier one starts over. Each decoded or skipped frame is charged to
/// ``AnimationBudget/maxWorkPixelCount`` (a canvas each) before libjxl works on it.
/// Not thread-safe: one decode call, or under the lock of ``JXLAnimatedProvider``.
final class JXLFrameReader {
    let handle: JXLDecoderHandle
    let header: JXLHeader
    private let options: ImageDecodeOptions
    /// The orientation the codestream declares.
    let orientation: ImageOrientation
    /// The size frames come out at.
    let target: PixelSize
    /// Index of the frame the decoder reaches next.
    private var nextIndex = 0
    private var workSpent = 0

    /// Opens `data` and reads up to the basic info, checking the pixel budget against it before any pixel buffer
    /// exists. Throws `badImageData`, or `imageTooLarge`.
    init(data: Data, header: JXLHeader, options: ImageDecodeOptions, maxThreads: Int) throws(ImageError) {
        handle = try JXLDecoderHandle(data: data, isFinal: true, maxThreads: maxThreads)
        self.header = header
        self.options = options
        try Self.readBasicInfo(handle, options: options)
        let stored = handle.storedSize
        orientation = ImageOrientation(rawValue: Int(handle.info?.orientation.rawValue ?? 1)) ?? .up
        let shown =
            options.applyOrientation && orientation.swapsDimensions
            ? PixelSize(width: stored.height, height: stored.width) : stored
        target = options.targetSize(forSourceWidth: shown.width, height: shown.height)
    }

    /// Runs the decoder to its basic info and checks the budget against it (and the header's size against it).
    private static func readBasicInfo(_ handle: JXLDecoderHandle, options: ImageDecodeOptions) throws(ImageError) {
        while true {
            switch try handle.next() {
            case .basicInfo:
                let size = handle.storedSize
                try options.checkPixelBudget(width: size.width, height: size.height)
                return
            case .success, .needMoreInput:
                throw JXLStatus.badData("no image header")
            default:
                continue
            }
        }
    }

    /// True when the codestream declares an animation.
    var isAnimated: Bool { (handle.info?.have_animation ?? 0) != 0 }

    /// Stored (unoriented) canvas size.
    var storedSize: PixelSize { handle.storedSize }

    /// Decodes frame `index` (0 for a still) and gives it `duration`.
    func frame(at index: Int, duration: Double) throws(ImageError) -> ImageFrame {
        if index < nextIndex || handle.needsReset {
            try handle.restart()
            try Self.readBasicInfo(handle, options: options)
            nextIndex = 0
            workSpent = 0
        }
        let canvas = storedSize.width * storedSize.height
        if index > nextIndex {
            try options.animationBudget.spendWork((index - nextIndex) * canvas, from: &workSpent)
            handle.skipFrames(index - nextIndex)
            nextIndex = index
        }
        while true {
            switch try handle.next() {
            case .needImageOutBuffer:
                try options.animationBudget.spendWork(canvas, from: &workSpent)
                let decoded = try handle.decodeFrame()
                nextIndex += 1
                return ImageFrame(
                    pixels: Self.shaped(decoded, orientation: orientation, options: options), duration: duration)
            case .success, .needMoreInput:
                throw JXLStatus.badData("frame \(index) is missing")
            default:
                continue
            }
        }
    }

    /// Wraps samples `handle` decoded into a buffer of its own (its stored size and layout), then orients and
    /// resamples them as `options` ask: what a preview goes through.
    static func pixels(
        _ bytes: [UInt8], from handle: JXLDecoderHandle, orientation: ImageOrientation, options: ImageDecodeOptions
    ) throws(ImageError) -> PixelBuffer {
        let stored = handle.storedSize
        let pixels = try PixelBuffer(
            width: stored.width, height: stored.height, layout: handle.layout, alphaMode: handle.alphaMode,
            validating: bytes)
        return shaped(pixels, orientation: orientation, options: options)
    }

    /// A decoded frame or preview oriented and resampled as `options` ask.
    static func shaped(
        _ decoded: PixelBuffer, orientation: ImageOrientation, options: ImageDecodeOptions
    ) -> PixelBuffer {
        var pixels = decoded
        if options.applyOrientation { pixels = pixels.oriented(orientation) }
        let target = options.targetSize(forSourceWidth: pixels.width, height: pixels.height)
        if pixels.width != target.width || pixels.height != target.height {
            pixels = pixels.areaResampled(width: target.width, height: target.height)
        }
        return pixels
    }

    /// Orientation, the ICC profile of the decoded pixels, EXIF from the container, the stored size.
    func metadata(isPartial: Bool = false) -> ImageMetadata {
        ImageMetadata(
            orientation: options.applyOrientation ? .up : orientation, sourceOrientation: orientation,
            iccProfile: handle.iccProfile, exif: header.exif, sourcePixelWidth: storedSize.width,
            sourcePixelHeight: storedSize.height, isPartial: isPartial)
    }
}
