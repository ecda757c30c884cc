internal import CWebP
import ImageCore
import Synchronization

/// Owns a `WebPAnimDecoder` (libwebpdemux's compositor: it applies each frame's blend and dispose method onto
/// the canvas) over ``WebPBytes``; deletes it in `deinit`.
///
/// Frames come out in order; asking for an earlier one resets the decoder. Not thread-safe: one decode call, or
/// under the lock of ``WebPAnimatedProvider``.
final class WebPAnimDecoderHandle {
    let bytes: WebPBytes
    let decoder: OpaquePointer
    let canvasWidth: Int
    let canvasHeight: Int
    let frameCount: Int
    let loopCount: Int
    private var nextIndex = 0
    /// The work limit of one pass through the frames (each frame costs a canvas: libwebp blends into a full copy).
    private let budget: AnimationBudget
    /// Canvas pixels composited in the current pass.
    private(set) var workSpent = 0

    /// Opens the animation. The caller checks the pixel budget on the canvas first: this allocates canvases.
    init(bytes: WebPBytes, budget: AnimationBudget) throws(ImageError) {
        var options = WebPAnimDecoderOptions()
        guard WebPAnimDecoderOptionsInit(&options) != 0 else {
            throw WebPErrors.malformed("libwebp version mismatch")
        }
        options.color_mode = MODE_RGBA
        options.use_threads = 0
        var data = bytes.webpData
        guard let decoder = WebPAnimDecoderNew(&data, &options) else {
            throw WebPErrors.malformed("invalid animated WebP (WebPAnimDecoderNew failed)")
        }
        var info = WebPAnimInfo()
        guard WebPAnimDecoderGetInfo(decoder, &info) != 0, info.frame_count > 0 else {
            WebPAnimDecoderDelete(decoder)
            throw WebPErrors.malformed("animated WebP without frames")
        }
        self.bytes = bytes
        self.budget = budget
        self.decoder = decoder
        self.canvasWidth = Int(info.canvas_width)
        self.canvasHeight = Int(info.canvas_height)
        self.frameCount = Int(info.frame_count)
        self.loopCount = Int(info.loop_count)
    }

    deinit { WebPAnimDecoderDelete(decoder) }

    /// The demuxer the animation decoder owns (valid while `self` lives).
    var demux: OpaquePointer? { WebPAnimDecoderGetDemuxer(decoder) }

    /// Frame `index` at `target` size, taken from libwebp's fully composited canvas (RGBA, straight alpha), which
    /// libwebp owns and reuses for the next frame: at the canvas's size copied once into pooled storage, otherwise
    /// rescaled by libwebp's rescaler from a picture imported from it.
    func frame(at index: Int, target: PixelSize, duration: Double) throws(ImageError) -> ImageFrame {
        guard index >= 0 && index < frameCount else {
            throw WebPErrors.malformed("frame \(index) out of range 0..<\(frameCount)")
        }
        if index < nextIndex {
            WebPAnimDecoderReset(decoder)
            nextIndex = 0
            workSpent = 0
        }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var timestamp: Int32 = 0
        while nextIndex <= index {
            try budget.spendWork(canvasWidth * canvasHeight, from: &workSpent)
            guard WebPAnimDecoderGetNext(decoder, &buffer, &timestamp) != 0, buffer != nil else {
                // The decoder's state is undefined after a failure: start over next time.
                WebPAnimDecoderReset(decoder)
                nextIndex = 0
                workSpent = 0
                throw WebPErrors.malformed("cannot decode animation frame \(nextIndex)")
            }
            nextIndex += 1
        }
        let canvas = UnsafeBufferPointer(start: UnsafePointer(buffer!), count: canvasWidth * canvasHeight * 4)
        guard target.width != canvasWidth || target.height != canvasHeight else {
            let pixels = try PixelBuffer(
                validatingWidth: canvasWidth, height: canvasHeight, layout: .rgba8, alphaMode: .straight
            ) { _ = $0.initialize(from: canvas) }
            return ImageFrame(pixels: pixels, duration: duration)
        }
        let picture = try WebPPictureHandle(
            rgba: canvas, width: canvasWidth, height: canvasHeight, hasAlpha: true, useARGB: true)
        try picture.rescale(to: target)
        return ImageFrame(pixels: try picture.rgbaPixels(), duration: duration)
    }
}

/// Timing and size facts of an animated WebP.
struct WebPAnimationInfo: Sendable {
    var canvas: PixelSize
    var loopCount: Int
    var durations: [Double]
}

/// Decodes the frames of one animated WebP on demand.
///
/// Holds the encoded bytes and one ``WebPAnimDecoderHandle`` (libwebp keeps two canvas-sized buffers inside it)
/// so that frames requested in order cost one frame decode each; no decoded frame is kept. Thread-safe: the
/// decoder sits behind a `Mutex`; concurrent requests are decoded one at a time.
final class WebPAnimatedProvider: AnimatedImageProvider {
    private let info: WebPAnimationInfo
    private let target: PixelSize
    private let handle: Mutex<WebPAnimDecoderHandle>

    /// The encoded bytes plus libwebp's two canvas-sized RGBA buffers.
    let retainedByteCount: Int

    init(handle: sending WebPAnimDecoderHandle, info: WebPAnimationInfo, target: PixelSize) {
        self.info = info
        self.target = target
        retainedByteCount = handle.bytes.count + 2 * handle.canvasWidth * handle.canvasHeight * 4
        self.handle = Mutex(handle)
    }

    var frameCount: Int { info.durations.count }
    var loopCount: Int { info.loopCount }
    var canvasSize: PixelSize { target }

    func duration(at index: Int) -> Double {
        index >= 0 && index < info.durations.count ? info.durations[index] : 0
    }

    func frame(at index: Int) throws -> ImageFrame {
        // The rescale runs under the lock too: it reads libwebp's canvas, which the next frame overwrites.
        let duration = duration(at: index)
        return try handle.withLock { (handle: inout WebPAnimDecoderHandle) throws(ImageError) -> ImageFrame in
            try handle.frame(at: index, target: target, duration: duration)
        }
    }
}
