internal import CJXL
import Foundation
import ImageCore

/// Whether an animation's bytes end inside its last frame, which listing the frames cannot tell.
///
/// libjxl lists the frames from their headers and skips their data; for the last frame it reports the end of the
/// codestream without the data being there. A decode that shows the first frame and decodes the others on demand
/// would then hand out an animation whose last frames fail, unmarked. Decoding the last frame (libjxl skips the
/// frames it does not reference) finds out: libjxl asks for more input than the bytes hold.
enum JXLLastFrameCheck {
    /// True when decoding frame `count - 1` of `data` runs out of bytes. False when it decodes, fails otherwise
    /// (the provider reports that frame's error when asked for it), or would exceed the animation's work budget.
    static func endsInLastFrame(
        _ data: Data, header: JXLHeader, count: Int, options: ImageDecodeOptions, maxThreads: Int
    ) -> Bool {
        var verify = options
        verify.thumbnailPixelSize = nil  // the pixels are dropped: skip the resample
        do {
            let reader = try JXLFrameReader(data: data, header: header, options: verify, maxThreads: maxThreads)
            _ = try reader.frame(at: count - 1, duration: 0)
            return false
        } catch {
            let cause = error.underlying as? JXLLibError
            return cause?.status == Int(JXL_DEC_NEED_MORE_INPUT.rawValue)
        }
    }
}
