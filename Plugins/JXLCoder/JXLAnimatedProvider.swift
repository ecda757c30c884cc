import ImageCore
import Synchronization

/// Decodes the frames of one JPEG XL animation on demand.
///
/// Holds the encoded bytes and one libjxl decoder (with the reference frames libjxl keeps for coalescing), so
/// frames requested in order cost one frame decode each; no decoded frame is kept. Thread-safe: the reader sits
/// behind a `Mutex`; concurrent requests decode one at a time.
final class JXLAnimatedProvider: AnimatedImageProvider {
    private let reader: Mutex<JXLFrameReader>
    private let durations: [Double]
    let loopCount: Int
    let canvasSize: PixelSize

    /// The encoded bytes plus an estimate of libjxl's state, which it does not report: the frame being decoded and
    /// up to four reference frames, in 32-bit float, four channels.
    let retainedByteCount: Int

    init(reader: sending JXLFrameReader, durations: [Double], loopCount: Int) {
        let stored = reader.storedSize
        retainedByteCount = reader.handle.data.count + 5 * stored.width * stored.height * 16
        canvasSize = reader.target
        self.durations = durations
        self.loopCount = loopCount
        self.reader = Mutex(reader)
    }

    var frameCount: Int { durations.count }

    func duration(at index: Int) -> Double {
        index >= 0 && index < durations.count ? durations[index] : 0
    }

    func frame(at index: Int) throws -> ImageFrame {
        guard index >= 0 && index < durations.count else {
            throw ImageError(.badImageData, stage: .decode, message: "frame \(index) out of range 0..<\(frameCount)")
        }
        let duration = duration(at: index)
        return try reader.withLock { (reader: inout JXLFrameReader) throws(ImageError) -> ImageFrame in
            try reader.frame(at: index, duration: duration)
        }
    }
}
