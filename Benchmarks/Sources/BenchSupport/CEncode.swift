import CBaselines
import Foundation

/// Encoders of the raw C libraries, used to build inputs (the same bytes feed the SDK and the C baselines).
public enum CEncode {
    /// Runs a `cb_*_encode` call and returns its bytes.
    static func run(_ name: String, _ body: (UnsafeMutablePointer<cb_buffer>) -> Int32) -> Data {
        var buffer = cb_buffer()
        defer { cb_buffer_free(&buffer) }
        let status = body(&buffer)
        precondition(status == 0 && buffer.data != nil, "\(name) failed while building benchmark inputs")
        return Data(bytes: buffer.data, count: buffer.size)
    }

    /// TurboJPEG, 4:2:0.
    public static func jpeg(_ pixels: Pixels, quality: Int) -> Data {
        pixels.bytes.withUnsafeBufferPointer { input in
            run("tjCompress2") {
                cb_jpeg_encode(
                    input.baseAddress, Int32(pixels.width), Int32(pixels.height), Int32(pixels.channels),
                    Int32(quality), $0)
            }
        }
    }

    /// libpng simplified write, default level.
    public static func png(_ pixels: Pixels) -> Data {
        pixels.bytes.withUnsafeBufferPointer { input in
            run("png_image_write_to_memory") {
                cb_png_encode(
                    input.baseAddress, Int32(pixels.width), Int32(pixels.height), Int32(pixels.channels), $0)
            }
        }
    }

    /// libwebp lossy.
    public static func webp(_ pixels: Pixels, quality: Float) -> Data {
        pixels.bytes.withUnsafeBufferPointer { input in
            run("WebPEncode") {
                cb_webp_encode(
                    input.baseAddress, Int32(pixels.width), Int32(pixels.height), Int32(pixels.channels), quality,
                    $0)
            }
        }
    }

    /// giflib with GifQuantizeBuffer (RGBA input).
    public static func gif(_ pixels: Pixels) -> Data {
        let rgba = pixels.rgba()
        return rgba.bytes.withUnsafeBufferPointer { input in
            run("EGif") { cb_gif_encode(input.baseAddress, Int32(rgba.width), Int32(rgba.height), $0) }
        }
    }
}
