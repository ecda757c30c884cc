import ImageCore
import Synchronization

/// Decodes the frames of one AVIF image sequence on demand.
///
/// Holds the encoded bytes and one libavif decoder (with the AV1 decoder's reference frames inside), so frames
/// requested in order cost one frame decode each and a jump costs a decode from the nearest keyframe; no decoded
/// frame is kept. Thread-safe: the decoder sits behind a `Mutex`; concurrent requests decode one at a time.
final class AVIFAnimatedProvider: AnimatedImageProvider {
    private let reader: Mutex<AVIFFrameReader>
    private let durations: [Double]
    let loopCount: Int
    let canvasSize: PixelSize

    /// The encoded bytes plus an estimate of the AV1 decoder's buffers: up to 8 reference frames and the output
    /// frame in YUV (libavif does not report them), and the RGB frame being converted.
    let retainedByteCount: Int

    init(reader: sending AVIFFrameReader, durations: [Double], loopCount: Int) {
        let stored = reader.storedSize
        let yuvFrame = stored.width * stored.height * 3
        retainedByteCount = reader.handle.bytes.count + 9 * yuvFrame
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
        let duration = duration(at: index)
        return try reader.withLock { (reader: inout AVIFFrameReader) throws(ImageError) -> ImageFrame in
            try reader.frame(at: index, duration: duration)
        }
    }
}
