internal import CGIF
import Foundation
import ImageCore

/// Collects what giflib writes through its output callback.
final class GIFByteWriter {
    var bytes: [UInt8] = []
}

/// Owns one giflib encoding handle and the writer its callback appends to; closes it in `deinit` if the encode
/// did not get that far. Not thread-safe: one encode call.
final class GIFEncodeHandle {
    let writer = GIFByteWriter()
    private(set) var gif: UnsafeMutablePointer<GifFileType>?

    init() throws(ImageError) {
        var status: Int32 = 0
        gif = EGifOpen(
            Unmanaged.passUnretained(writer).toOpaque(),
            { file, bytes, count in
                guard let file, let bytes, count > 0, let user = file.pointee.UserData else { return 0 }
                let writer = Unmanaged<GIFByteWriter>.fromOpaque(user).takeUnretainedValue()
                writer.bytes.append(contentsOf: UnsafeBufferPointer(start: bytes, count: Int(count)))
                return count
            }, &status)
        guard gif != nil else { throw GIFErrors.encode(status, "cannot start GIF encoder") }
    }

    deinit {
        if let gif {
            var status: Int32 = 0
            EGifCloseFile(gif, &status)
        }
    }

    /// Runs a giflib call that returns `GIF_OK`/`GIF_ERROR`, mapping failure to `encodeFailed`.
    func check(_ context: String, _ call: (UnsafeMutablePointer<GifFileType>) -> Int32) throws(ImageError) {
        guard let gif else { throw GIFErrors.encode(E_GIF_ERR_NOT_WRITEABLE, context) }
        guard call(gif) == GIF_OK else { throw GIFErrors.encode(gif.pointee.Error, context) }
    }

    /// Writes the trailer and frees the handle; returns the file.
    func finish() throws(ImageError) -> [UInt8] {
        guard let gif else { throw GIFErrors.encode(E_GIF_ERR_NOT_WRITEABLE, "GIF encoder already closed") }
        self.gif = nil
        var status: Int32 = 0
        guard EGifCloseFile(gif, &status) == GIF_OK else { throw GIFErrors.encode(status, "cannot finish GIF") }
        return writer.bytes
    }
}

/// Writes images as GIF89a through `EGifOpen` with a memory write callback.
enum GIFEncoder {
    static func encode(_ image: Image, options: ImageEncodeOptions) throws -> Data {
        let target =
            options.maxPixelSize.map { GIFPixels.fit(width: image.width, height: image.height, inside: $0) }
            ?? PixelSize(width: image.width, height: image.height)
        // GIF stores sizes in 16 bits; checked before any conversion to giflib's integers.
        guard target.width > 0, target.height > 0, target.width <= 0xFFFF, target.height <= 0xFFFF else {
            throw ImageError(.encodeFailed, stage: .encode, message: "GIF cannot store \(target)")
        }
        // Every frame is decoded, resampled and quantized: the whole animation must fit its budget first.
        let count =
            options.firstFrameOnly
            ? 1 : try image.framesWithinBudget(outputPixelsPerFrame: target.width * target.height, stage: .encode)
        let animated = count > 1
        let handle = try GIFEncodeHandle()
        try handle.check("cannot write header") { gif in
            EGifSetGifVersion(gif, true)
            return EGifPutScreenDesc(gif, Int32(target.width), Int32(target.height), 8, 0, nil)
        }
        if animated && image.loopCount != 1 {
            try writeLoopCount(min(max(image.loopCount, 0), 0xFFFF), handle)
        }
        for index in 0..<count {
            let frame = try image.frame(at: index)
            guard frame.pixels.width > 0, frame.pixels.height > 0 else {
                throw ImageError(.encodeFailed, stage: .encode, message: "frame \(index) is empty")
            }
            let rgba = frame.pixels.areaResampled(width: target.width, height: target.height).straightRGBABytes()
            try writeFrame(
                GIFQuantizer.quantize(rgba), size: target, duration: animated ? frame.duration : nil, handle)
        }
        return Data(try handle.finish())
    }

    private static func writeLoopCount(_ loops: Int, _ handle: GIFEncodeHandle) throws(ImageError) {
        try handle.check("cannot write loop count") { gif in
            var identifier = Array("NETSCAPE2.0".utf8)
            var data: [UInt8] = [1, UInt8(loops & 0xFF), UInt8(loops >> 8)]
            guard EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_OK,
                EGifPutExtensionBlock(gif, Int32(identifier.count), &identifier) == GIF_OK,
                EGifPutExtensionBlock(gif, Int32(data.count), &data) == GIF_OK
            else { return GIF_ERROR }
            return EGifPutExtensionTrailer(gif)
        }
    }

    /// Writes a graphic control extension (animations and transparency) and one full-canvas image block.
    private static func writeFrame(
        _ frame: GIFIndexedFrame, size: PixelSize, duration: Double?, _ handle: GIFEncodeHandle
    ) throws(ImageError) {
        if duration != nil || frame.transparentIndex != nil {
            var control = GraphicsControlBlock()
            // Every frame covers the canvas; clearing it keeps transparent pixels from showing the last frame.
            control.DisposalMode = frame.transparentIndex != nil ? DISPOSE_BACKGROUND : DISPOSE_DO_NOT
            control.UserInputFlag = false
            control.DelayTime = Int32(min(max(((duration ?? 0) * 100).rounded(), 0), 0xFFFF))
            control.TransparentColor = Int32(frame.transparentIndex ?? Int(NO_TRANSPARENT_COLOR))
            try handle.check("cannot write graphic control") { gif in
                var extensionBytes = [UInt8](repeating: 0, count: 4)
                let length = EGifGCBToExtension(&control, &extensionBytes)
                return EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, Int32(length), extensionBytes)
            }
        }
        var tableSize = 2
        while tableSize < frame.colorCount { tableSize <<= 1 }
        var colors = [GifColorType](repeating: GifColorType(), count: tableSize)
        for i in 0..<frame.colorCount {
            colors[i] = GifColorType(
                Red: frame.palette[i * 3], Green: frame.palette[i * 3 + 1], Blue: frame.palette[i * 3 + 2])
        }
        guard let map = GifMakeMapObject(Int32(tableSize), colors) else {
            throw GIFErrors.encode(E_GIF_ERR_NOT_ENOUGH_MEM, "cannot make colour map")
        }
        defer { GifFreeMapObject(map) }
        try handle.check("cannot write image descriptor") { gif in
            EGifPutImageDesc(gif, 0, 0, Int32(size.width), Int32(size.height), false, map)
        }
        var indices = frame.indices
        try handle.check("cannot write image data") { gif in
            indices.withUnsafeMutableBufferPointer { buffer in
                for y in 0..<size.height {
                    let row = buffer.baseAddress! + y * size.width
                    if EGifPutLine(gif, row, Int32(size.width)) != GIF_OK { return GIF_ERROR }
                }
                return GIF_OK
            }
        }
    }
}
