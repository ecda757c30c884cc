import Foundation
import ImageCore
import Synchronization

/// Decodes the frames of one APNG on demand.
///
/// Holds the encoded bytes, the frame index and one ``APNGCompositor`` (a canvas-sized RGBA buffer), so frames
/// requested in order cost one frame decode each; no decoded frame is kept. Thread-safe: the compositor sits
/// behind a `Mutex`; frames requested concurrently are decoded one at a time.
final class APNGAnimatedProvider: AnimatedImageProvider {
    private let structure: APNGStructure
    private let data: Data
    private let header: PNGChunks
    private let target: PixelSize
    private let budget: AnimationBudget
    private let compositor: Mutex<APNGCompositor?>

    /// Creates a provider; `compositor`, when given, continues from where the caller left it. Each pass through
    /// the frames is charged to `budget`'s work limit.
    init(
        data: Data, structure: APNGStructure, header: PNGChunks, target: PixelSize, budget: AnimationBudget,
        compositor: sending APNGCompositor?
    ) {
        self.data = data
        self.structure = structure
        self.header = header
        self.target = target
        self.budget = budget
        self.compositor = Mutex(compositor)
    }

    var frameCount: Int { structure.frames.count }
    var loopCount: Int { structure.loopCount }
    var canvasSize: PixelSize { target }
    /// The encoded bytes plus the compositor's canvas (RGBA at the IHDR size).
    var retainedByteCount: Int { data.count + structure.width * structure.height * 4 }

    func duration(at index: Int) -> Double {
        guard index >= 0 && index < structure.frames.count else { return 0 }
        return structure.frames[index].duration
    }

    func frame(at index: Int) throws -> ImageFrame {
        let canvas = try compositor.withLock { (state: inout APNGCompositor?) throws(ImageError) -> CompositingCanvas in
            if state == nil {
                state = try APNGCompositor(data: data, structure: structure, header: header, budget: budget)
            }
            return try state!.canvas(at: index)
        }
        // Resampling runs outside the lock: it needs only this frame's pixels.
        return APNGDecoder.makeFrame(canvas, target: target, duration: duration(at: index))
    }
}

/// The provider of a still PNG opened as an animation: one frame, decoded on request.
///
/// Thread-safe: immutable; each request decodes the bytes again (nothing is retained).
final class PNGStillProvider: AnimatedImageProvider {
    private let data: Data
    private let options: ImageDecodeOptions
    let canvasSize: PixelSize

    init(data: Data, options: ImageDecodeOptions, canvasSize: PixelSize) {
        self.data = data
        self.options = options
        self.canvasSize = canvasSize
    }

    var frameCount: Int { 1 }
    var loopCount: Int { 0 }
    var retainedByteCount: Int { data.count }

    func duration(at index: Int) -> Double { 0 }

    func frame(at index: Int) throws -> ImageFrame {
        guard index == 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "PNG: frame \(index) out of range 0..<1")
        }
        return try PNGDecoder.decode(data, options: options).frames[0]
    }
}
