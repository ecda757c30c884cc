internal import CGIF
import ImageCore

/// What a GIF's frame needs for decoding and compositing, read without decompressing any pixels.
struct GIFFrameInfo: Sendable {
    /// Offset of the frame's image separator (`0x2C`) in the file; decoding seeks here.
    var descriptorOffset: Int
    var left: Int
    var top: Int
    var width: Int
    var height: Int
    /// Graphic control extension disposal method (0 unspecified, 1 keep, 2 background, 3 previous).
    var disposal: Int
    /// Palette index drawn as transparent, or nil.
    var transparentIndex: Int?
    /// Delay in hundredths of a second as stored.
    var delayCentiseconds: Int
    /// Rows stored in interlaced order (every row must be decompressed to draw any).
    var interlaced: Bool

    /// Display time with the browsers' clamp: delays of 10 ms or less play at 100 ms.
    var duration: Double { delayCentiseconds <= 1 ? 0.1 : Double(delayCentiseconds) / 100 }
}

/// The frame index of a GIF: canvas size, frames, loop count and ICC profile, from one pass that skips the LZW
/// data with `DGifGetCode`/`DGifGetCodeNext`.
struct GIFStructure: Sendable {
    var width: Int
    var height: Int
    var frames: [GIFFrameInfo]
    /// NETSCAPE2.0 loop count; 1 (play once) when the extension is absent; 0 is forever.
    var loopCount: Int
    var iccProfile: [UInt8]?
    /// False when the bytes ended before the trailer (only possible with `allowTruncated`).
    var isComplete: Bool
    /// True when the bytes ended after a whole frame instead of at the trailer, which a full decode accepts as
    /// browsers do: the file may have been cut there, so the image is marked incomplete.
    var endsBeforeTrailer = false
    /// True when the scan stopped at the frame limit (``AnimationBudget/Policy/firstFrameOnly``): only the
    /// first frame may be shown.
    var exceededFrameLimit = false

    /// The part of `frame` that lies on the canvas (empty, never inverted, when none does).
    func clip(_ frame: GIFFrameInfo) -> GIFCompositor.ClipRect {
        GIFCompositor.ClipRect(
            left: frame.left, top: frame.top, width: frame.width, height: frame.height, canvasWidth: width,
            canvasHeight: height)
    }

    /// Rows of `frame` the compositor must decompress: none when nothing reaches the canvas, all of an interlaced
    /// frame, else down to its last row on the canvas.
    func rowsToDecompress(_ frame: GIFFrameInfo) -> Int {
        let rect = clip(frame)
        guard !rect.isEmpty else { return 0 }
        return frame.interlaced ? frame.height : rect.y1 - frame.top
    }

    /// Frame pixels one pass through the first `count` frames decompresses.
    func workPixels(frames count: Int) -> Int {
        var total = 0
        for frame in frames.prefix(count) {
            total = total.addingReportingOverflow(rowsToDecompress(frame) * frame.width).partialValue
        }
        return total
    }

    /// Reads the structure of `bytes`.
    ///
    /// Checks the pixel budget on the canvas right after the screen descriptor and on every frame's declared
    /// size, before any pixel memory exists, and the frame limit (``AnimationBudget/maxFrameCount``) as frames
    /// are listed: past it the scan throws `imageTooLarge`, or stops with ``exceededFrameLimit`` set when the
    /// budget's policy keeps the first frame. With ``ImageDecodeOptions/firstFrameOnly`` the scan stops after
    /// the first frame. With `allowTruncated` (incremental decoding), running out of bytes
    /// stops the scan and returns the frames complete so far; otherwise it is `badImageData`. A file that ends
    /// cleanly after a complete frame but lacks the trailer byte is accepted, as browsers do.
    static func scan(
        _ bytes: [UInt8], options: ImageDecodeOptions, allowTruncated: Bool = false
    ) throws(ImageError) -> GIFStructure {
        let handle = try GIFDecodeHandle(bytes: bytes)
        try options.checkPixelBudget(width: handle.screenWidth, height: handle.screenHeight)
        var result = GIFStructure(
            width: handle.screenWidth, height: handle.screenHeight, frames: [], loopCount: 1, iccProfile: nil,
            isComplete: false)
        var pendingControl: (disposal: Int, transparent: Int?, delay: Int)?
        var sawLoopCount = false
        let reader = handle.reader
        scanning: while true {
            let recordStart = reader.cursor
            do throws(ImageError) {
                if reader.cursor >= bytes.count && !result.frames.isEmpty {
                    result.endsBeforeTrailer = true
                    break scanning  // no trailer: accept the frames read so far
                }
                switch try handle.nextRecord() {
                case IMAGE_DESC_RECORD_TYPE:
                    try handle.readImageDescriptor()
                    let desc = handle.gif.pointee.Image
                    let frameWidth = Int(desc.Width)
                    let frameHeight = Int(desc.Height)
                    guard frameWidth > 0, frameHeight > 0 else {
                        throw GIFErrors.malformed("frame \(result.frames.count) is \(frameWidth)x\(frameHeight)")
                    }
                    try options.checkPixelBudget(width: frameWidth, height: frameHeight)
                    if result.frames.count >= max(1, options.maxFrameCount) {
                        guard options.animationBudget.onExceeded == .firstFrameOnly else {
                            try options.animationBudget.checkFrameCount(result.frames.count + 1)
                            break scanning
                        }
                        result.exceededFrameLimit = true
                        result.isComplete = true
                        break scanning
                    }
                    try handle.skipImageData()
                    result.frames.append(
                        GIFFrameInfo(
                            descriptorOffset: recordStart, left: Int(desc.Left), top: Int(desc.Top),
                            width: frameWidth, height: frameHeight, disposal: pendingControl?.disposal ?? 0,
                            transparentIndex: pendingControl?.transparent,
                            delayCentiseconds: pendingControl?.delay ?? 0, interlaced: desc.Interlace))
                    pendingControl = nil
                    if options.firstFrameOnly {
                        result.isComplete = true
                        break scanning
                    }
                case EXTENSION_RECORD_TYPE:
                    let ext = try handle.readExtension()
                    if ext.code == GRAPHICS_EXT_FUNC_CODE, ext.first.count >= 4 {
                        let packed = Int(ext.first[0])
                        pendingControl = (
                            disposal: (packed >> 2) & 0x07,
                            transparent: packed & 0x01 != 0 ? Int(ext.first[3]) : nil,
                            delay: Int(ext.first[1]) | Int(ext.first[2]) << 8
                        )
                    } else if ext.code == APPLICATION_EXT_FUNC_CODE {
                        let identifier = String(decoding: ext.first, as: UTF8.self)
                        if !sawLoopCount, identifier == "NETSCAPE2.0" || identifier == "ANIMEXTS1.0",
                            let data = ext.rest.first, data.count >= 3, data[0] == 1
                        {
                            result.loopCount = Int(data[1]) | Int(data[2]) << 8
                            sawLoopCount = true
                        } else if identifier == "ICCRGBG1012", result.iccProfile == nil {
                            result.iccProfile = ext.rest.flatMap { $0 }
                        }
                    }
                case TERMINATE_RECORD_TYPE:
                    result.isComplete = true
                    break scanning
                default:
                    throw GIFErrors.malformed("unexpected record type")
                }
            } catch {
                if error.code == .imageTooLarge { throw error }
                // A frame is only listed once all its data was read, so what was listed is complete.
                if allowTruncated && reader.hitEnd { return result }
                throw error
            }
        }
        if !allowTruncated || result.isComplete {
            guard !result.frames.isEmpty else { throw GIFErrors.malformed("the GIF contains no frames") }
            result.isComplete = true
        }
        return result
    }
}
