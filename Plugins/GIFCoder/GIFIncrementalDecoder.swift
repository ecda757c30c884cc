import Foundation
import ImageCore

/// Incremental GIF decoding: shows the first frame once all its bytes have arrived.
///
/// GIF frames are LZW streams that are only useful once complete, so each update re-scans the prefix (the scan
/// skips LZW data and is cheap) until the first frame is complete, then keeps that partial image. Once
/// `isFinal`, it returns exactly what ``GIFCoder/decode(_:options:)`` returns for the same bytes.
/// Not thread-safe (the protocol's contract: one thread at a time).
final class GIFIncrementalDecoder: IncrementalImageDecoder {
    private let coder: GIFCoder
    private let options: ImageDecodeOptions
    private var data = Data()
    private var isFinal = false
    private var partial: Image?
    private var final: Image?

    init(coder: GIFCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
    }

    func update(_ data: Data, isFinal: Bool) {
        self.data = data
        self.isFinal = isFinal
    }

    func currentImage() throws -> Image? {
        if isFinal {
            if let final { return final }
            let image = try coder.decode(data, options: options)
            final = image
            return image
        }
        if let partial { return partial }
        guard data.count >= Self.headerLength(data) else { return nil }
        let bytes = [UInt8](data)
        let structure = try GIFStructure.scan(bytes, options: options, allowTruncated: true)
        guard !structure.frames.isEmpty else { return nil }
        let image = try GIFCoder.makeImage(bytes: bytes, structure: structure, options: options, isPartial: true)
        partial = image
        return image
    }

    /// Signature, logical screen descriptor and global colour table: what giflib reads when it opens a file.
    private static func headerLength(_ data: Data) -> Int {
        guard data.count >= 13 else { return 13 }
        let packed = data[data.startIndex + 10]
        return 13 + (packed & 0x80 != 0 ? 3 << (Int(packed & 0x07) + 1) : 0)
    }
}
