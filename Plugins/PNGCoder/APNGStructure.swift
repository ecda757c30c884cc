import ImageCore

/// One frame of an APNG as its `fcTL` chunk describes it, with where its compressed data lies.
struct APNGFrameInfo: Sendable, Equatable {
    /// What happens to the frame's region after it was shown.
    enum Dispose: UInt8, Sendable {
        /// Leave the canvas as it is.
        case none = 0
        /// Clear the region to transparent black.
        case background = 1
        /// Restore the region to what it was before the frame was drawn.
        case previous = 2
    }

    /// How the frame is drawn onto the canvas.
    enum Blend: UInt8, Sendable {
        /// Replace the region, alpha included.
        case source = 0
        /// Composite over the region (straight alpha "over").
        case over = 1
    }

    var width: Int
    var height: Int
    var x: Int
    var y: Int
    var delayNumerator: Int
    var delayDenominator: Int
    var dispose: Dispose
    var blend: Blend
    /// Byte ranges of the frame's zlib stream: `IDAT` payloads for the default image, `fdAT` payloads without their
    /// sequence number otherwise.
    var data: [Range<Int>]
    /// True when the data comes from `IDAT` (the default image is this frame).
    var isDefaultImage: Bool

    /// Display time with the browsers' clamp used by every coder of the SDK: `delay_den` 0 means 100, and a delay
    /// of 10 ms or less plays at 100 ms.
    var duration: Double {
        let seconds = Double(delayNumerator) / Double(delayDenominator == 0 ? 100 : delayDenominator)
        return seconds <= 0.010 ? 0.1 : seconds
    }

    /// Pixels of the frame's own rectangle: what decompressing it costs.
    var pixelCount: Int { width * height }
}

/// The frame index of an APNG, read by walking its chunks without decompressing anything.
///
/// Decides whether the bytes are an animation at all (``scan(_:stopAfterFirstFrame:)`` returns nil for a still PNG)
/// and, when they are, validates every animation chunk before any pixel is decoded. Thread-safe: a value.
///
/// The rules, the same as Pillow's and the APNG-patched libpng's (the references of the shared corpus):
/// - **The animation is ignored** (the file is a still PNG showing its default image, as every non-APNG decoder
///   shows it) when there is no `acTL` before the first `IDAT`, when there are several, when `acTL` is not 8 bytes
///   long, or when `num_frames` is 0 or above 2^31 − 1. `fcTL` and `fdAT` chunks of such a file are ignored.
/// - **The animation is damaged** (``ImageError/Code/badImageData``, no fallback) when a sequence number is out
///   of order, an `fdAT` has no `fcTL` before it, an `fcTL` has no frame data, an `fcTL` is not 26 bytes long,
///   declares an empty frame, a frame reaching outside the canvas or an unknown dispose or blend op, when the
///   `fcTL` of the default image does not cover the canvas, when a chunk runs past the end of the data, or when
///   the file holds fewer frames than `num_frames` declares. Frames past `num_frames` are ignored.
/// - CRCs of `acTL`, `fcTL` and `fdAT` are not checked (ancillary chunks; the references only warn); `IDAT` CRCs
///   are checked by libpng as usual.
struct APNGStructure: Sendable {
    /// Canvas (IHDR) width.
    var width: Int
    /// Canvas (IHDR) height.
    var height: Int
    /// `acTL` `num_plays`: 0 is forever.
    var loopCount: Int
    /// `acTL` `num_frames`.
    var declaredFrameCount: Int
    /// The frames, at most ``declaredFrameCount`` (only the first with `stopAfterFirstFrame`).
    var frames: [APNGFrameInfo]
    /// The original IHDR chunk, length to CRC.
    var ihdr: Range<Int>
    /// Chunks before the first `IDAT` that change how pixels decode (`PLTE`, `tRNS`, `gAMA`, `cHRM`, `sRGB`,
    /// `iCCP`, `sBIT`), length to CRC: every frame's stream carries them.
    var sharedChunks: [Range<Int>]
    /// Every `IDAT` chunk, length to CRC (the default image's stream copies them with their CRCs).
    var imageDataChunks: [Range<Int>]
    /// True when an iCCP chunk precedes the image data.
    var hasICCP: Bool

    /// Frame pixels one pass through the first `count` frames decompresses.
    func workPixels(frames count: Int) -> Int {
        var total = 0
        for frame in frames.prefix(count) { total = total.addingReportingOverflow(frame.pixelCount).partialValue }
        return total
    }

    /// The chunk types copied into every frame's stream.
    private static let sharedTypes: Set<String> = ["PLTE", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT"]

    /// What an `acTL` before the first `IDAT` says.
    struct AnimationControl: Sendable, Equatable {
        /// `num_frames`, 1 to 2^31 − 1.
        var numFrames: Int
        /// `num_plays`, 0 for forever.
        var numPlays: Int
    }

    /// Reads the chunks up to the first `IDAT`: the animation control when the file is an APNG (nil when the
    /// animation is ignored, see the type's rules), and whether the answer is final (false while `bytes`, a
    /// prefix, ends before the first `IDAT`: a later chunk could still change it).
    static func animationControl(_ bytes: UnsafeRawBufferPointer) -> (control: AnimationControl?, decided: Bool) {
        var control: AnimationControl?
        var count = 0
        var decided = false
        let overrun = walk(bytes) { type, offset, length in
            switch type {
            case "acTL":
                count += 1
                control =
                    length == 8
                    ? AnimationControl(numFrames: u32(bytes, offset), numPlays: u32(bytes, offset + 4)) : nil
            case "IDAT", "IEND":
                decided = true
                return false
            default: break
            }
            return true
        }
        // A prefix that ends inside the first IDAT has all the chunks that come before it.
        if overrun?.type == "IDAT" { decided = true }
        guard count == 1, let control, control.numFrames >= 1, control.numFrames <= Int(Int32.max) else {
            return (nil, decided)
        }
        return (control, decided)
    }

    /// True when `bytes` (a prefix reaching the first `IDAT`) is an APNG whose default image is not part of the
    /// animation: no `fcTL` precedes the `IDAT`, so the image data that arrives first is never shown.
    static func defaultImageIsHidden(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard case (_?, true) = animationControl(bytes) else { return false }
        var frameControlFirst = false
        walk(bytes) { type, _, _ in
            if type == "fcTL" { frameControlFirst = true }
            return type != "IDAT" && type != "IEND" && type != "fcTL"
        }
        return !frameControlFirst
    }

    /// Reads the frame index of `bytes`, a whole file whose signature and IHDR were checked by ``PNGChunks`` and
    /// whose ``animationControl(_:)`` is `control`.
    ///
    /// With `stopAfterFirstFrame` the walk ends once the first frame's data is complete, so later damage, missing
    /// frames or a cut after the first frame's data go unnoticed (what a first-frame decode wants).
    /// - Throws: ``ImageError/Code/badImageData`` naming the damage (see the type's rules).
    static func scan(
        _ bytes: UnsafeRawBufferPointer, control: AnimationControl, stopAfterFirstFrame: Bool
    ) throws(ImageError) -> APNGStructure {
        var result = APNGStructure(
            width: u32(bytes, 16), height: u32(bytes, 20), loopCount: control.numPlays,
            declaredFrameCount: control.numFrames, frames: [], ihdr: 8..<33, sharedChunks: [], imageDataChunks: [],
            hasICCP: false)
        var state = ScanState()
        var failure: ImageError?
        let overrun = walk(bytes) { type, offset, length in
            do throws(ImageError) {
                return try result.apply(
                    type, offset: offset, length: length, bytes: bytes, state: &state,
                    stopAfterFirstFrame: stopAfterFirstFrame)
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        if let overrun {
            // A first-frame decode only needs the first frame whole: a cut after its data (not inside a data chunk,
            // which may still belong to it) is the rest of the file missing, as with a truncated download.
            let firstFrameWhole = state.frameCount >= 1 || state.openHasData
            let inFrameData = overrun.type == "IDAT" || overrun.type == "fdAT"
            guard stopAfterFirstFrame, firstFrameWhole, !inFrameData else {
                throw damaged("the \(overrun.type) chunk at byte \(overrun.offset) runs past the end of the data")
            }
        }
        try result.finish(state, stoppedEarly: state.stopped || stopAfterFirstFrame)
        return result
    }

    /// Walk state carried between chunks.
    private struct ScanState {
        var nextSequence = 0
        var open: APNGFrameInfo?
        var openHasData = false
        var seenImageData = false
        var imageDataEnded = false
        var stopped = false
        var frameCount = 0
    }

    /// Applies one chunk; returns false to stop the walk.
    private mutating func apply(
        _ type: String, offset: Int, length: Int, bytes: UnsafeRawBufferPointer, state: inout ScanState,
        stopAfterFirstFrame: Bool
    ) throws(ImageError) -> Bool {
        let chunk = (offset - 8)..<(offset + length + 4)
        switch type {
        case "IDAT":
            if state.imageDataEnded { throw Self.damaged("IDAT chunks are not consecutive") }
            if let open = state.open, !open.isDefaultImage {
                throw Self.damaged("IDAT inside the frame that starts with sequence number \(state.nextSequence - 1)")
            }
            state.seenImageData = true
            imageDataChunks.append(chunk)
            if state.open != nil {
                state.open?.data.append(offset..<offset + length)
                state.openHasData = true
            }
            return true
        case "fcTL":
            if state.seenImageData { state.imageDataEnded = true }
            try closeOpenFrame(&state)
            if stopAfterFirstFrame && state.frameCount >= 1 {
                state.stopped = true
                return false
            }
            guard length == 26 else { throw Self.damaged("fcTL chunk of \(length) bytes (26 expected)") }
            try Self.checkSequence(Self.u32(bytes, offset), &state)
            var frame = try Self.frameControl(bytes, offset, canvasWidth: width, canvasHeight: height)
            if !state.seenImageData {
                guard frame.width == width, frame.height == height, frame.x == 0, frame.y == 0 else {
                    throw Self.damaged(
                        "the default image's fcTL is \(frame.width)x\(frame.height)+\(frame.x)+\(frame.y), "
                            + "the canvas \(width)x\(height)")
                }
                frame.isDefaultImage = true
            }
            state.open = frame
            state.openHasData = false
            return true
        case "fdAT":
            if state.seenImageData { state.imageDataEnded = true }
            guard length >= 4 else { throw Self.damaged("fdAT chunk of \(length) bytes") }
            try Self.checkSequence(Self.u32(bytes, offset), &state)
            guard let open = state.open, !open.isDefaultImage else {
                throw Self.damaged("fdAT with sequence number \(state.nextSequence - 1) has no fcTL before it")
            }
            state.open?.data.append((offset + 4)..<(offset + length))
            state.openHasData = true
            return true
        case "IEND":
            return false
        default:
            if state.seenImageData {
                state.imageDataEnded = true
            } else if Self.sharedTypes.contains(type) {
                sharedChunks.append(chunk)
                if type == "iCCP" { hasICCP = true }
            }
            return true
        }
    }

    /// Ends the frame being collected: it must have data; frames past `num_frames` are dropped.
    private mutating func closeOpenFrame(_ state: inout ScanState) throws(ImageError) {
        guard let open = state.open else { return }
        guard state.openHasData else {
            throw Self.damaged("the fcTL with sequence number \(state.nextSequence - 1) has no frame data")
        }
        if frames.count < declaredFrameCount { frames.append(open) }
        state.frameCount += 1
        state.open = nil
    }

    private mutating func finish(_ state: ScanState, stoppedEarly: Bool) throws(ImageError) {
        var state = state
        try closeOpenFrame(&state)
        guard !imageDataChunks.isEmpty else { throw Self.damaged("the file has no IDAT (no default image)") }
        if !stoppedEarly && frames.count < declaredFrameCount {
            throw Self.damaged("acTL declares \(declaredFrameCount) frames, the file holds \(frames.count)")
        }
        guard !frames.isEmpty else { throw Self.damaged("the animation has no frame") }
    }

    private static func checkSequence(_ sequence: Int, _ state: inout ScanState) throws(ImageError) {
        guard sequence == state.nextSequence else {
            throw damaged("sequence number \(sequence) where \(state.nextSequence) was expected")
        }
        state.nextSequence += 1
    }

    /// Parses and validates a 26-byte fcTL payload at `offset`.
    private static func frameControl(
        _ bytes: UnsafeRawBufferPointer, _ offset: Int, canvasWidth: Int, canvasHeight: Int
    ) throws(ImageError) -> APNGFrameInfo {
        let width = u32(bytes, offset + 4)
        let height = u32(bytes, offset + 8)
        let x = u32(bytes, offset + 12)
        let y = u32(bytes, offset + 16)
        // Every field is below 2^32, so the sums below cannot overflow a 64-bit Int.
        guard width > 0, height > 0, x + width <= canvasWidth, y + height <= canvasHeight else {
            throw damaged(
                "frame \(width)x\(height)+\(x)+\(y) does not lie on the \(canvasWidth)x\(canvasHeight) canvas")
        }
        guard let dispose = APNGFrameInfo.Dispose(rawValue: bytes[offset + 24]),
            let blend = APNGFrameInfo.Blend(rawValue: bytes[offset + 25])
        else {
            throw damaged("fcTL dispose_op \(bytes[offset + 24]) / blend_op \(bytes[offset + 25]) is not defined")
        }
        return APNGFrameInfo(
            width: width, height: height, x: x, y: y,
            delayNumerator: Int(bytes[offset + 20]) << 8 | Int(bytes[offset + 21]),
            delayDenominator: Int(bytes[offset + 22]) << 8 | Int(bytes[offset + 23]), dispose: dispose, blend: blend,
            data: [], isDefaultImage: false)
    }

    /// Calls `visit(type, dataOffset, length)` for each chunk after IHDR until it returns false, IEND, or the end
    /// of the bytes. Reports a chunk whose declared length runs past the end (nothing is visited for it).
    @discardableResult
    static func walk(
        _ bytes: UnsafeRawBufferPointer, _ visit: (String, Int, Int) -> Bool
    ) -> (type: String, offset: Int)? {
        var offset = 33
        while offset + 8 <= bytes.count {
            let length = u32(bytes, offset)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            let dataStart = offset + 8
            // The CRC must be there too: a chunk cut inside its CRC is as truncated as one cut inside its data.
            guard length <= bytes.count - dataStart - 4 || (length <= bytes.count - dataStart && type == "IEND")
            else { return (type, offset) }
            guard visit(type, dataStart, length) else { return nil }
            offset = dataStart + length + 4
        }
        return nil
    }

    static func u32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> Int {
        Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
    }

    static func damaged(_ message: String) -> ImageError {
        ImageError(.badImageData, stage: .decode, message: "APNG: \(message)")
    }
}
