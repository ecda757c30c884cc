import ImageCore
import Synchronization

/// Decodes the frames of one GIF animation on demand.
///
/// Holds the encoded bytes, the frame index and one ``GIFCompositor`` (a canvas-sized scratch buffer plus the
/// giflib handle) so that frames requested in order cost one frame decode each; no decoded frame is kept.
/// Thread-safe: the compositor sits behind a `Mutex`; frames requested concurrently are decoded one at a time.
final class GIFAnimatedProvider: AnimatedImageProvider {
    private let structure: GIFStructure
    private let bytes: [UInt8]
    private let target: PixelSize
    private let budget: AnimationBudget
    private let compositor: Mutex<GIFCompositor?>

    /// Creates a provider; `compositor`, when given, continues from where the caller left it. Each pass through
    /// the frames is charged to `budget`'s work limit.
    init(
        bytes: [UInt8], structure: GIFStructure, target: PixelSize, budget: AnimationBudget,
        compositor: sending GIFCompositor?
    ) {
        self.bytes = bytes
        self.structure = structure
        self.target = target
        self.budget = budget
        self.compositor = Mutex(compositor)
    }

    var frameCount: Int { structure.frames.count }
    var loopCount: Int { structure.loopCount }
    var canvasSize: PixelSize { target }
    /// The encoded bytes plus the compositor's canvas (RGBA at the logical screen size).
    var retainedByteCount: Int { bytes.count + structure.width * structure.height * 4 }

    func duration(at index: Int) -> Double {
        guard index >= 0 && index < structure.frames.count else { return 0 }
        return structure.frames[index].duration
    }

    func frame(at index: Int) throws -> ImageFrame {
        let canvas = try compositor.withLock { (state: inout GIFCompositor?) throws(ImageError) -> CompositingCanvas in
            if state == nil { state = try GIFCompositor(bytes: bytes, structure: structure, budget: budget) }
            return try state!.canvas(at: index)
        }
        // Resampling runs outside the lock: it needs only this frame's pixels.
        return GIFCoder.makeFrame(canvas, target: target, duration: duration(at: index))
    }
}
