internal import CGIF
import ImageCore

/// Serves giflib's read callback from an in-memory copy of the file, with a movable cursor.
///
/// Seeking lets the decoder jump straight to a frame's image descriptor: giflib reads the stream only through
/// this callback and never reads ahead of the block it is parsing.
final class GIFByteReader {
    let bytes: [UInt8]
    var cursor = 0
    /// True once a read asked for more bytes than remain (a truncated file or prefix).
    var hitEnd = false

    init(bytes: [UInt8]) { self.bytes = bytes }

    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) -> Int32 {
        let available = max(0, min(count, bytes.count - cursor))
        if available < count { hitEnd = true }
        if available > 0 {
            bytes.withUnsafeBufferPointer { source in
                buffer.update(from: source.baseAddress! + cursor, count: available)
            }
            cursor += available
        }
        return Int32(available)
    }
}

/// Owns one giflib decoding handle (`GifFileType`) and the reader its callback uses; closes it in `deinit`.
///
/// Not thread-safe: used by one decode call, or under the lock of the provider that keeps it.
final class GIFDecodeHandle {
    let reader: GIFByteReader
    let gif: UnsafeMutablePointer<GifFileType>

    /// Opens `bytes`: giflib reads the signature, the logical screen descriptor and the global colour table.
    init(bytes: [UInt8]) throws(ImageError) {
        let reader = GIFByteReader(bytes: bytes)
        var status: Int32 = 0
        let opened = DGifOpen(
            Unmanaged.passUnretained(reader).toOpaque(),
            { file, buffer, count in
                guard let file, let buffer, count > 0, let user = file.pointee.UserData else { return 0 }
                return Unmanaged<GIFByteReader>.fromOpaque(user).takeUnretainedValue().read(
                    into: buffer, count: Int(count))
            }, &status)
        guard let opened else {
            throw GIFErrors.decode(status == 0 ? D_GIF_ERR_READ_FAILED : status, "cannot open GIF")
        }
        self.reader = reader
        self.gif = opened
    }

    deinit {
        var status: Int32 = 0
        DGifCloseFile(gif, &status)
    }

    /// Canvas (logical screen) width.
    var screenWidth: Int { Int(gif.pointee.SWidth) }
    /// Canvas (logical screen) height.
    var screenHeight: Int { Int(gif.pointee.SHeight) }

    /// The error giflib recorded for the last failed call.
    func failure(_ context: String) -> ImageError {
        let code = gif.pointee.Error
        return GIFErrors.decode(code == 0 ? D_GIF_ERR_READ_FAILED : code, context)
    }

    /// Reads the next record type.
    func nextRecord() throws(ImageError) -> GifRecordType {
        var type = UNDEFINED_RECORD_TYPE
        guard DGifGetRecordType(gif, &type) == GIF_OK else { throw failure("cannot read record type") }
        return type
    }

    /// Reads an image descriptor (after its record type); its fields land in `gif.pointee.Image`.
    func readImageDescriptor() throws(ImageError) {
        guard DGifGetImageDesc(gif) == GIF_OK else { throw failure("cannot read image descriptor") }
    }

    /// Skips the LZW data of the current image without decoding it.
    func skipImageData() throws(ImageError) {
        var codeSize: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>? = nil
        guard DGifGetCode(gif, &codeSize, &block) == GIF_OK else { throw failure("cannot read image data") }
        while block != nil {
            guard DGifGetCodeNext(gif, &block) == GIF_OK else { throw failure("cannot read image data") }
        }
    }

    /// Reads one extension: its function code and the concatenated payload of its sub-blocks (the first
    /// sub-block separately, because application extensions put their identifier there).
    func readExtension() throws(ImageError) -> (code: Int32, first: [UInt8], rest: [[UInt8]]) {
        var code: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>? = nil
        guard DGifGetExtension(gif, &code, &block) == GIF_OK else { throw failure("cannot read extension") }
        let first = Self.subBlock(block)
        var rest: [[UInt8]] = []
        while block != nil {
            guard DGifGetExtensionNext(gif, &block) == GIF_OK else { throw failure("cannot read extension") }
            if block != nil { rest.append(Self.subBlock(block)) }
        }
        return (code, first, rest)
    }

    /// giflib hands out sub-blocks as a length byte followed by the bytes.
    private static func subBlock(_ block: UnsafeMutablePointer<GifByteType>?) -> [UInt8] {
        guard let block else { return [] }
        let length = Int(block[0])
        return Array(UnsafeBufferPointer(start: block + 1, count: length))
    }

    /// Decodes the next row of the current image into `row` (exactly the image's width).
    func readRow(_ row: inout [UInt8]) throws(ImageError) {
        let ok = row.withUnsafeMutableBufferPointer { DGifGetLine(gif, $0.baseAddress, Int32($0.count)) == GIF_OK }
        guard ok else { throw failure("cannot decode image data") }
    }
}
