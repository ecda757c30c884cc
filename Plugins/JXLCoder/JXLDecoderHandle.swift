internal import CJXL
import Foundation
import ImageCore

/// Owns one `JxlDecoder` (and its thread runner when several threads were asked for) and feeds it from a `Data`.
///
/// The input is set before each `JxlDecoderProcessInput` call and released right after, inside one
/// `withUnsafeBytes`, so no pointer into the bytes outlives the call; `JxlDecoderCloseInput` is never called
/// (that would forbid setting the input again), so input that ends too early shows up as
/// `JXL_DEC_NEED_MORE_INPUT`, which ``isFinal`` turns into an error. Pixels go to an output buffer set for one
/// frame (``decodeFrame()``) or, for previews, to a buffer the handle owns (``setStreamingBuffer()``).
/// Decoding is always to 8-bit samples in the stored orientation (`JxlDecoderSetKeepOrientation`); the coder
/// applies the orientation itself. Frees the decoder, then the runner, then its buffer in `deinit`.
///
/// Not thread-safe: one decode call, the incremental decoder's thread, or under a provider's lock.
final class JXLDecoderHandle {
    /// What ``next()`` stopped at.
    enum Event: Equatable {
        case basicInfo, frame, needImageOutBuffer, fullImage, progression, success, needMoreInput
    }

    private var decoder: OpaquePointer
    private var runner: UnsafeMutableRawPointer?
    private let events: Int32
    private let progressive: Bool
    /// The bytes: the whole file, or the prefix received so far.
    private(set) var data: Data
    /// True when ``data`` is the whole file: running out of input is then an error.
    private(set) var isFinal: Bool
    /// Bytes of ``data`` libjxl has consumed.
    private var consumed = 0
    /// True after a failure while libjxl held a pointer into memory that is gone: ``restart()`` must run first.
    private(set) var needsReset = false
    private var streamingBuffer: UnsafeMutableRawBufferPointer?

    /// The basic info, once ``next()`` returned `.basicInfo`.
    private(set) var info: JxlBasicInfo?
    /// The ICC profile of the decoded pixels, or nil when they are plain sRGB (or nothing was reported).
    private(set) var iccProfile: [UInt8]?
    /// The header of the frame being decoded, once ``next()`` returned `.frame`.
    private(set) var frameHeader = JxlFrameHeader()

    /// Creates a decoder subscribed to basic info, colour, frames and, unless `headersOnly`, full images (and
    /// progressive steps with `progressive`).
    init(data: Data, isFinal: Bool, headersOnly: Bool = false, progressive: Bool = false, maxThreads: Int)
        throws(ImageError)
    {
        guard let decoder = JxlDecoderCreate(nil) else {
            throw JXLStatus.badData("JxlDecoderCreate failed (out of memory)")
        }
        self.decoder = decoder
        self.data = data
        self.isFinal = isFinal
        self.progressive = progressive
        var wanted = JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue
        if !headersOnly { wanted |= JXL_DEC_FULL_IMAGE.rawValue }
        if progressive { wanted |= JXL_DEC_FRAME_PROGRESSION.rawValue }
        events = Int32(wanted)
        if maxThreads > 1 { runner = JxlThreadParallelRunnerCreate(nil, maxThreads) }
        try configure()
    }

    deinit {
        JxlDecoderDestroy(decoder)
        if let runner { JxlThreadParallelRunnerDestroy(runner) }
        streamingBuffer?.deallocate()
    }

    private func configure() throws(ImageError) {
        var ok = JxlDecoderSubscribeEvents(decoder, events) == JXL_DEC_SUCCESS
        ok = ok && JxlDecoderSetKeepOrientation(decoder, 1) == JXL_DEC_SUCCESS
        if progressive { ok = ok && JxlDecoderSetProgressiveDetail(decoder, kPasses) == JXL_DEC_SUCCESS }
        if let runner {
            ok = ok && JxlDecoderSetParallelRunner(decoder, JxlThreadParallelRunner, runner) == JXL_DEC_SUCCESS
        }
        guard ok else { throw JXLStatus.decode(JXL_DEC_ERROR, "cannot configure the decoder") }
    }

    /// Starts over from the first byte (a fresh decoder state; the settings are applied again).
    func restart() throws(ImageError) {
        JxlDecoderReset(decoder)
        consumed = 0
        needsReset = false
        info = nil
        iccProfile = nil
        streamingBuffer?.deallocate()
        streamingBuffer = nil
        try configure()
    }

    /// Replaces the bytes with a longer prefix of the same file (incremental decoding).
    func update(_ data: Data, isFinal: Bool) {
        self.data = data
        self.isFinal = isFinal
    }

    /// Skips the next `count` frames (`JxlDecoderSkipFrames`): their `.frame` events are not reported.
    func skipFrames(_ count: Int) {
        if count > 0 { JxlDecoderSkipFrames(decoder, count) }
    }

    /// Runs libjxl until the next event the caller acts on; colour events are handled here.
    ///
    /// - Throws: `badImageData` when libjxl fails or, with ``isFinal``, when the bytes end too early.
    func next() throws(ImageError) -> Event {
        guard !needsReset else { throw JXLStatus.badData("the decoder must restart after a failure") }
        while true {
            let status = process()
            switch status {
            case JXL_DEC_BASIC_INFO:
                var basic = JxlBasicInfo()
                guard JxlDecoderGetBasicInfo(decoder, &basic) == JXL_DEC_SUCCESS else {
                    throw JXLStatus.decode(status, "no basic info")
                }
                info = basic
                return .basicInfo
            case JXL_DEC_COLOR_ENCODING:
                try chooseOutputProfile()
            case JXL_DEC_FRAME:
                guard JxlDecoderGetFrameHeader(decoder, &frameHeader) == JXL_DEC_SUCCESS else {
                    throw JXLStatus.decode(status, "no frame header")
                }
                return .frame
            case JXL_DEC_NEED_IMAGE_OUT_BUFFER: return .needImageOutBuffer
            case JXL_DEC_FULL_IMAGE: return .fullImage
            case JXL_DEC_FRAME_PROGRESSION: return .progression
            case JXL_DEC_SUCCESS: return .success
            case JXL_DEC_NEED_MORE_INPUT:
                if isFinal { throw JXLStatus.decode(status, "the data ends before the image does (truncated)") }
                return .needMoreInput
            case JXL_DEC_ERROR:
                throw JXLStatus.decode(status, "libjxl cannot decode the data")
            default:
                throw JXLStatus.decode(status, "unexpected decoder status \(status.rawValue)")
            }
        }
    }

    /// One `JxlDecoderProcessInput` over the bytes not consumed yet.
    private func process() -> JxlDecoderStatus {
        data.withUnsafeBytes { raw -> JxlDecoderStatus in
            guard let base = raw.baseAddress, consumed < raw.count else { return JXL_DEC_NEED_MORE_INPUT }
            let start = base.assumingMemoryBound(to: UInt8.self) + consumed
            guard JxlDecoderSetInput(decoder, start, raw.count - consumed) == JXL_DEC_SUCCESS else {
                return JXL_DEC_ERROR
            }
            let status = JxlDecoderProcessInput(decoder)
            consumed = raw.count - JxlDecoderReleaseInput(decoder)
            return status
        }
    }

    /// The layout frames decode to: gray or RGB, with alpha when the image has an alpha channel.
    var layout: PixelLayout {
        guard let info else { return .rgba8 }
        switch (info.num_color_channels == 1, info.alpha_bits > 0) {
        case (true, false): return .gray8
        case (true, true): return .grayAlpha8
        case (false, false): return .rgb8
        case (false, true): return .rgba8
        }
    }

    /// Stored (unoriented) size from the basic info.
    var storedSize: PixelSize {
        PixelSize(width: Int(info?.xsize ?? 0), height: Int(info?.ysize ?? 0))
    }

    private var pixelFormat: JxlPixelFormat {
        JxlPixelFormat(
            num_channels: UInt32(layout.bytesPerPixel), data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN,
            align: 0)
    }

    /// The byte count of one frame, checked against what libjxl asks for.
    private func frameByteCount() throws(ImageError) -> Int {
        let size = storedSize
        let (count, overflow) = (size.width * layout.bytesPerPixel).multipliedReportingOverflow(by: size.height)
        var format = pixelFormat
        var asked = 0
        guard !overflow, JxlDecoderImageOutBufferSize(decoder, &format, &asked) == JXL_DEC_SUCCESS, asked == count
        else { throw JXLStatus.decode(JXL_DEC_ERROR, "unexpected output buffer size \(asked) for \(size)") }
        return count
    }

    /// After `.needImageOutBuffer`: decodes the frame into a new buffer of pooled storage (libjxl writes straight
    /// into it) and returns it at `.fullImage`. The storage is only handed to libjxl inside this call, and a frame
    /// that does not reach `.fullImage` makes no buffer (so no recycled byte is ever seen); a failure leaves the
    /// decoder needing ``restart()``.
    func decodeFrame() throws(ImageError) -> PixelBuffer {
        let count = try frameByteCount()
        let size = storedSize
        var format = pixelFormat
        do throws(ImageError) {
            return try PixelBuffer(
                validatingWidth: size.width, height: size.height, layout: layout, alphaMode: alphaMode
            ) { buffer throws(ImageError) in
                guard buffer.count == count,
                    JxlDecoderSetImageOutBuffer(decoder, &format, buffer.baseAddress, count) == JXL_DEC_SUCCESS
                else { throw JXLStatus.decode(JXL_DEC_ERROR, "cannot set the output buffer") }
                while true {
                    switch try next() {
                    case .fullImage: return
                    case .progression: continue
                    case .needMoreInput:
                        throw JXLStatus.decode(JXL_DEC_NEED_MORE_INPUT, "the frame is incomplete")
                    default:
                        throw JXLStatus.decode(JXL_DEC_ERROR, "the frame ended without its pixels")
                    }
                }
            }
        } catch {
            needsReset = true
            throw error
        }
    }

    /// How the decoded colour relates to alpha: premultiplied when the file says so.
    var alphaMode: AlphaMode {
        layout.hasAlpha && (info?.alpha_premultiplied ?? 0) != 0 ? .premultiplied : .straight
    }

    /// After `.needImageOutBuffer` in incremental decoding: gives libjxl a buffer the handle owns, so a frame can
    /// be filled across several updates and flushed for previews.
    func setStreamingBuffer() throws(ImageError) {
        let count = try frameByteCount()
        streamingBuffer?.deallocate()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 64)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        streamingBuffer = buffer
        var format = pixelFormat
        guard JxlDecoderSetImageOutBuffer(decoder, &format, buffer.baseAddress, count) == JXL_DEC_SUCCESS else {
            throw JXLStatus.decode(JXL_DEC_ERROR, "cannot set the output buffer")
        }
    }

    /// Renders what has arrived into the streaming buffer (`JxlDecoderFlushImage`) and copies it; nil when
    /// libjxl has nothing to show yet.
    func flushedPixels() -> [UInt8]? {
        guard let buffer = streamingBuffer, JxlDecoderFlushImage(decoder) == JXL_DEC_SUCCESS else { return nil }
        return streamedPixels(buffer)
    }

    /// A copy of the streaming buffer (after `.fullImage`, the complete frame).
    func streamedPixels() -> [UInt8]? {
        streamingBuffer.map { streamedPixels($0) }
    }

    private func streamedPixels(_ buffer: UnsafeMutableRawBufferPointer) -> [UInt8] {
        let count = storedSize.width * storedSize.height * layout.bytesPerPixel
        return Array(UnsafeRawBufferPointer(rebasing: buffer[0..<min(count, buffer.count)]))
    }

    /// At the colour event: 8-bit output of a lossy (XYB) image whose original colour is an ICC profile, or linear,
    /// would come out linear (libjxl's default), which 8 bits cannot hold well: ask for sRGB instead. Then record
    /// the profile of the pixels as they will come out.
    private func chooseOutputProfile() throws(ImageError) {
        guard let info else { return }
        let gray = info.num_color_channels == 1
        if info.uses_original_profile == 0 {
            var original = JxlColorEncoding()
            let hasEnum =
                JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_ORIGINAL, &original)
                == JXL_DEC_SUCCESS
            var output = JxlColorEncoding()
            let outputKnown =
                JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &output)
                == JXL_DEC_SUCCESS
            if !hasEnum || (outputKnown && output.transfer_function == JXL_TRANSFER_FUNCTION_LINEAR) {
                var srgb = JxlColorEncoding()
                JxlColorEncodingSetToSRGB(&srgb, gray ? 1 : 0)
                _ = JxlDecoderSetPreferredColorProfile(decoder, &srgb)
            }
        }
        var output = JxlColorEncoding()
        if JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &output) == JXL_DEC_SUCCESS,
            Self.isSRGB(output)
        {
            iccProfile = nil
            return
        }
        var size = 0
        guard JxlDecoderGetICCProfileSize(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS,
            size > 0, size <= 64 << 20
        else {
            iccProfile = nil
            return
        }
        var profile = [UInt8](repeating: 0, count: size)
        let status = profile.withUnsafeMutableBufferPointer {
            JxlDecoderGetColorAsICCProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, $0.baseAddress, size)
        }
        iccProfile = status == JXL_DEC_SUCCESS ? profile : nil
    }

    /// True for the encoding an untagged image is assumed to be in: sRGB (or gray with the sRGB curve), D65.
    private static func isSRGB(_ encoding: JxlColorEncoding) -> Bool {
        (encoding.color_space == JXL_COLOR_SPACE_RGB || encoding.color_space == JXL_COLOR_SPACE_GRAY)
            && encoding.white_point == JXL_WHITE_POINT_D65
            && (encoding.color_space == JXL_COLOR_SPACE_GRAY || encoding.primaries == JXL_PRIMARIES_SRGB)
            && encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB
    }
}
