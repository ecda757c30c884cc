internal import CJXL
import Foundation
import ImageCore

/// The frames of a JPEG XL animation, listed by a decoder subscribed to frame headers only: libjxl then skips
/// every frame's pixel data (listing 60 frames takes well under a millisecond), so the frame budget is checked
/// before any pixel is decoded.
struct JXLAnimationIndex: Sendable {
    /// Display time of each frame, in seconds, with the browsers' clamp (10 ms or less plays at 100 ms).
    var durations: [Double]
    /// Times the animation repeats; 0 is forever.
    var loopCount: Int
    /// True when listing stopped at the frame budget (``AnimationBudget/maxFrameCount``): more frames follow.
    var exceededFrameLimit: Bool

    /// Lists the displayed frames of `data`, stopping once there are more than `maxFrameCount`.
    ///
    /// - Throws: `badImageData` when the codestream is damaged or truncated.
    static func read(_ data: Data, maxFrameCount: Int) throws(ImageError) -> JXLAnimationIndex {
        let handle = try JXLDecoderHandle(data: data, isFinal: true, headersOnly: true, maxThreads: 1)
        var index = JXLAnimationIndex(durations: [], loopCount: 0, exceededFrameLimit: false)
        var ticks = 0.001
        while true {
            switch try handle.next() {
            case .basicInfo:
                let animation = handle.info?.animation
                index.loopCount = Int(animation?.num_loops ?? 0)
                if let animation, animation.tps_numerator > 0 {
                    ticks = Double(animation.tps_denominator) / Double(animation.tps_numerator)
                }
            case .frame:
                if index.durations.count >= max(1, maxFrameCount) {
                    index.exceededFrameLimit = true
                    return index
                }
                let seconds = Double(handle.frameHeader.duration) * ticks
                index.durations.append(seconds <= 0.010 ? 0.1 : seconds)
            case .success:
                guard !index.durations.isEmpty else { throw JXLStatus.badData("the file holds no frame") }
                return index
            default:
                continue
            }
        }
    }
}
