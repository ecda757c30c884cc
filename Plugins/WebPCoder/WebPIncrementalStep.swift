internal import CWebP
import Foundation
import ImageCore

/// Owns a `WebPIDecoder` and the heap-allocated `WebPDecoderConfig` it keeps pointers into; frees both (and
/// the decoder's output buffer) in `deinit`. Not thread-safe.
final class WebPIDecoderHandle {
    private let config: UnsafeMutablePointer<WebPDecoderConfig>
    private let decoder: OpaquePointer

    init(header: WebPHeader, target: PixelSize) throws(ImageError) {
        let config = UnsafeMutablePointer<WebPDecoderConfig>.allocate(capacity: 1)
        config.initialize(to: WebPDecoderConfig())
        guard WebPInitDecoderConfig(config) != 0 else {
            config.deallocate()
            throw WebPErrors.decode(VP8_STATUS_INVALID_PARAM, "libwebp version mismatch")
        }
        config.pointee.options.use_threads = 0
        if target.width != header.width || target.height != header.height {
            config.pointee.options.use_scaling = 1
            config.pointee.options.scaled_width = Int32(target.width)
            config.pointee.options.scaled_height = Int32(target.height)
        }
        config.pointee.output.colorspace = header.hasAlpha ? MODE_RGBA : MODE_RGB
        guard let decoder = WebPIDecode(nil, 0, config) else {
            config.deallocate()
            throw WebPErrors.decode(VP8_STATUS_OUT_OF_MEMORY, "cannot create incremental decoder")
        }
        self.config = config
        self.decoder = decoder
    }

    deinit {
        WebPIDelete(decoder)
        WebPFreeDecBuffer(&config.pointee.output)
        config.deallocate()
    }

    /// Feeds more bytes (libwebp copies them). `VP8_STATUS_SUSPENDED` means "need more".
    func append(_ bytes: UnsafeRawBufferPointer) -> VP8StatusCode {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return VP8_STATUS_SUSPENDED }
        return WebPIAppend(decoder, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    /// The rows decoded so far, copied into a full-size buffer (rows below are zero), or nil when none are.
    func decodedRows(layout: PixelLayout) -> (pixels: [UInt8], rows: Int, width: Int, height: Int)? {
        var lastY: Int32 = 0
        var width: Int32 = 0
        var height: Int32 = 0
        var stride: Int32 = 0
        guard let rgb = WebPIDecGetRGB(decoder, &lastY, &width, &height, &stride), lastY > 0 else { return nil }
        let rowBytes = Int(width) * layout.bytesPerPixel
        var pixels = [UInt8](repeating: 0, count: rowBytes * Int(height))
        pixels.withUnsafeMutableBufferPointer { out in
            for y in 0..<Int(lastY) {
                (out.baseAddress! + y * rowBytes).update(from: rgb + y * Int(stride), count: rowBytes)
            }
        }
        return (pixels, Int(lastY), Int(width), Int(height))
    }
}

/// WebP's step of the incremental decoder, on `WebPIDecoder`: previews grow row by row as bytes arrive; the
/// missing rows are transparent (or black without alpha).
///
/// The header (`WebPGetFeatures`) gives the size the scaffold checks against the budget before the decoder
/// allocates its output. Animated WebP yields no preview (libwebp decodes animations only whole). The final image
/// is exactly ``WebPCoder/decode(_:options:)`` of the same bytes.
final class WebPIncrementalStep: IncrementalDecoderStep {
    private let coder: WebPCoder
    private let options: ImageDecodeOptions
    private var header: WebPHeader?
    private var decoder: WebPIDecoderHandle?
    private var appended = 0
    private var rows = 0

    init(coder: WebPCoder, options: ImageDecodeOptions) {
        self.coder = coder
        self.options = options
    }

    func header(in data: Data) throws -> PixelSize? {
        do throws(ImageError) {
            let read = try WebPHeader.read(data)
            header = read
            return PixelSize(width: read.width, height: read.height)
        } catch {
            if (error.underlying as? WebPLibError)?.code == Int(VP8_STATUS_NOT_ENOUGH_DATA.rawValue) { return nil }
            throw error
        }
    }

    func preview(of data: Data) throws -> IncrementalPreview {
        guard let header, !header.hasAnimation else { return .finished(nil) }
        let decoder =
            try self.decoder
            ?? WebPIDecoderHandle(
                header: header, target: options.targetSize(forSourceWidth: header.width, height: header.height))
        self.decoder = decoder
        let status = data.withUnsafeBytes { raw in
            decoder.append(UnsafeRawBufferPointer(rebasing: raw[appended...]))
        }
        appended = data.count
        guard status == VP8_STATUS_OK || status == VP8_STATUS_SUSPENDED else {
            throw WebPErrors.decode(status, "cannot decode WebP incrementally")
        }
        let layout = WebPStillDecoder.layout(for: header)
        guard let decoded = decoder.decodedRows(layout: layout), decoded.rows != rows else { return .nothingNew }
        rows = decoded.rows
        let pixels = try PixelBuffer(
            width: decoded.width, height: decoded.height, layout: layout, alphaMode: header.hasAlpha ? .straight : nil,
            validating: decoded.pixels)
        return .image(
            Image(
                pixels: pixels, format: .webp,
                metadata: ImageMetadata(
                    sourcePixelWidth: header.width, sourcePixelHeight: header.height, isPartial: true)))
    }

    func decodeFinal(_ data: Data) throws -> Image { try coder.decode(data, options: options) }
}
