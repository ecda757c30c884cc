import Foundation
import ImageCore

/// Decodes an APNG (a PNG with a valid `acTL`): the first frame plus an on-demand provider, every frame, or only
/// the first, per the options; budgets are checked from `acTL` and the `fcTL`s before any pixel is decoded.
///
/// Frames are composited RGBA8 with straight alpha, at the canvas (IHDR) size, then area-averaged to the
/// thumbnail or scale-down size. Thread-safe: pure functions; the provider serializes its compositor.
enum APNGDecoder {
    /// What the options and the budget allow of an animation that declares `numFrames` frames: nil to decode the
    /// animation, or the reason to keep only its first frame. Checked from `acTL` alone, before the chunk walk.
    ///
    /// - Throws: ``ImageError/Code/imageTooLarge`` when `numFrames` exceeds the frame budget and the budget's
    ///   policy is `fail`.
    static func firstFrameOnly(numFrames: Int, options: ImageDecodeOptions) throws(ImageError) -> Bool {
        if options.firstFrameOnly { return true }
        guard numFrames > options.maxFrameCount else { return false }
        guard options.animationBudget.onExceeded == .firstFrameOnly else {
            try options.animationBudget.checkFrameCount(numFrames)
            return true
        }
        return true
    }

    /// Decodes `data`, whose IHDR is `header` (the canvas, already within the pixel budget) and whose `acTL` is
    /// `control`.
    static func decode(
        _ data: Data, header: PNGChunks, control: APNGStructure.AnimationControl, options: ImageDecodeOptions
    ) throws -> Image {
        let firstOnly = try firstFrameOnly(numFrames: control.numFrames, options: options)
        let structure = try data.withUnsafeBytes {
            try APNGStructure.scan($0, control: control, stopAfterFirstFrame: firstOnly)
        }
        let budget = options.animationBudget
        let target = options.targetSize(forSourceWidth: structure.width, height: structure.height)
        var count = firstOnly ? 1 : structure.frames.count
        if count > 1 && options.preloadAllFrames {
            // Every frame will be held and decoded once: refuse before any pixel is decoded.
            do throws(ImageError) {
                try budget.checkMaterialization(frameCount: count, pixelsPerFrame: target.width * target.height)
                var work = 0
                try budget.spendWork(structure.workPixels(frames: count), from: &work)
            } catch {
                guard budget.onExceeded == .firstFrameOnly else { throw error }
                count = 1
            }
        }
        let compositor = try APNGCompositor(data: data, structure: structure, header: header, budget: budget)
        let metadata = ImageMetadata(
            iccProfile: structure.hasICCP ? PNGDecoder.iccProfile(of: data) : nil, exif: header.exif,
            sourcePixelWidth: structure.width, sourcePixelHeight: structure.height)
        let still = count == 1
        func frame(_ index: Int) throws(ImageError) -> ImageFrame {
            makeFrame(
                try compositor.canvas(at: index), target: target, duration: still ? 0 : structure.frames[index].duration
            )
        }
        if still || options.preloadAllFrames {
            var frames: [ImageFrame] = []
            frames.reserveCapacity(count)
            for index in 0..<count { frames.append(try frame(index)) }
            return Image(
                frames: frames, loopCount: structure.loopCount, format: .png, metadata: metadata,
                animationBudget: budget)
        }
        let first = try frame(0)
        let provider = APNGAnimatedProvider(
            data: data, structure: structure, header: header, target: target, budget: budget,
            compositor: compositor)
        return Image(
            frames: [first], frameCount: count, loopCount: structure.loopCount, format: .png, metadata: metadata,
            animatedProvider: provider, animationBudget: budget)
    }

    /// The frame at `target` size (see ``/ImageCore/CompositingCanvas/frame(target:)``).
    static func makeFrame(_ canvas: CompositingCanvas, target: PixelSize, duration: Double) -> ImageFrame {
        ImageFrame(pixels: canvas.frame(target: target), duration: duration)
    }
}
