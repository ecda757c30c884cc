import BenchSupport
import CBaselines
import Foundation

/// Swift entry points of the raw C baselines; each traps on failure, which would be a broken benchmark input.
enum CBaseline {
    static func withBytes<T>(_ data: Data, _ body: (UnsafePointer<UInt8>, Int) -> T) -> T {
        data.withUnsafeBytes { raw in body(raw.bindMemory(to: UInt8.self).baseAddress!, raw.count) }
    }

    static func check(_ status: Int32, _ what: String) {
        if status != 0 { fatalError("C baseline \(what) failed with status \(status)") }
    }

    static func decode(_ format: CoderFormat, _ data: Data) -> UInt32 {
        var checksum: UInt32 = 0
        let channels = Int32(format.decodedChannels)
        let status = withBytes(data) { bytes, count in
            switch format {
            case .jpeg: cb_jpeg_decode_fresh(bytes, count, channels, 0, &checksum)
            case .png: cb_png_decode(bytes, count, channels, &checksum)
            case .webp: cb_webp_decode(bytes, count, channels, &checksum)
            case .gif: cb_gif_decode(bytes, count, &checksum)
            }
        }
        check(status, "decode \(format.rawValue)")
        return checksum
    }

    static func encode(_ format: CoderFormat, _ pixels: Pixels) -> Int {
        var buffer = cb_buffer()
        defer { cb_buffer_free(&buffer) }
        let width = Int32(pixels.width)
        let height = Int32(pixels.height)
        let channels = Int32(pixels.channels)
        let status = pixels.bytes.withUnsafeBufferPointer { input in
            switch format {
            case .jpeg: cb_jpeg_encode(input.baseAddress, width, height, channels, 85, &buffer)
            case .png: cb_png_encode(input.baseAddress, width, height, channels, &buffer)
            case .webp: cb_webp_encode(input.baseAddress, width, height, channels, 85, &buffer)
            case .gif: cb_gif_encode(input.baseAddress, width, height, &buffer)
            }
        }
        check(status, "encode \(format.rawValue)")
        return buffer.size
    }

    /// A TurboJPEG decompressor and output buffer kept across decodes.
    final class ReusedJPEGDecoder {
        let context: OpaquePointer

        init() {
            guard let context = cb_jpeg_reuse_create() else { fatalError("tjInitDecompress failed") }
            self.context = context
        }

        deinit { cb_jpeg_reuse_destroy(context) }

        func decode(_ data: Data) -> UInt32 {
            var checksum: UInt32 = 0
            let status = withBytes(data) { cb_jpeg_decode_reused(context, $0, $1, 3, 0, &checksum) }
            check(status, "reused JPEG decode")
            return checksum
        }
    }

    /// The C thumbnail pipeline; returns the JPEG size in bytes.
    static func thumbnail(_ data: Data, side: Int) -> (bytes: Int, width: Int, height: Int) {
        var buffer = cb_buffer()
        defer { cb_buffer_free(&buffer) }
        var width: Int32 = 0
        var height: Int32 = 0
        let status = withBytes(data) {
            cb_jpeg_thumbnail($0, $1, Int32(side), Int32(side), 85, &buffer, &width, &height)
        }
        check(status, "thumbnail")
        return (buffer.size, Int(width), Int(height))
    }
}
