import Foundation
import ImageCore

/// GIF's step of the incremental decoder: shows the first frame once all its bytes have arrived.
///
/// GIF frames are LZW streams that are only useful once complete, so each preview re-scans the prefix (the scan
/// skips LZW data and is cheap) until the first frame is complete; that frame is then the preview until the bytes
/// are final, when the image is exactly ``GIFCoder/decode(_:options:)`` of the same bytes.
final class GIFIncrementalStep: IncrementalDecoderStep {
    private let coder: GIFCoder
    private let options: ImageDecodeOptions

    init(coder: GIFCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
    }

    /// The logical screen size, once the signature, the screen descriptor and the global colour table (what giflib
    /// reads when it opens a file) have arrived.
    func header(in data: Data) throws -> PixelSize? {
        guard data.count >= Self.headerLength(data) else { return nil }
        let b = data.startIndex
        return PixelSize(
            width: Int(data[b + 6]) | Int(data[b + 7]) << 8, height: Int(data[b + 8]) | Int(data[b + 9]) << 8)
    }

    func preview(of data: Data) throws -> IncrementalPreview {
        let bytes = [UInt8](data)
        let structure = try GIFStructure.scan(bytes, options: options, allowTruncated: true)
        guard !structure.frames.isEmpty else { return .nothingNew }
        return .finished(try GIFCoder.makeImage(bytes: bytes, structure: structure, options: options, isPartial: true))
    }

    func decodeFinal(_ data: Data) throws -> Image { try coder.decode(data, options: options) }

    /// Signature, logical screen descriptor and global colour table.
    private static func headerLength(_ data: Data) -> Int {
        guard data.count >= 13 else { return 13 }
        let packed = data[data.startIndex + 10]
        return 13 + (packed & 0x80 != 0 ? 3 << (Int(packed & 0x07) + 1) : 0)
    }
}
