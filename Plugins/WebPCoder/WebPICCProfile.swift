internal import CWebP
import ImageCore

/// Embeds an ICC profile (the `ICCP` chunk of the extended format) into encoded WebP bytes with libwebpmux, so
/// pixels that are not sRGB keep their meaning.
enum WebPICCProfile {
    /// `webp` with `profile` added; the bytes unchanged when `profile` is nil.
    static func embedding(_ profile: [UInt8]?, in webp: [UInt8]) throws(ImageError) -> [UInt8] {
        guard let profile, !profile.isEmpty else { return webp }
        return try webp.withUnsafeBufferPointer { (image) throws(ImageError) -> [UInt8] in
            try profile.withUnsafeBufferPointer { (icc) throws(ImageError) -> [UInt8] in
                var source = WebPData(bytes: image.baseAddress, size: image.count)
                guard let mux = WebPMuxCreate(&source, 0) else {
                    throw WebPErrors.encode("cannot reopen the encoded WebP to add its ICC profile")
                }
                defer { WebPMuxDelete(mux) }
                var chunk = WebPData(bytes: icc.baseAddress, size: icc.count)
                guard WebPMuxSetChunk(mux, "ICCP", &chunk, 0) == WEBP_MUX_OK else {
                    throw WebPErrors.encode("cannot add the ICC profile")
                }
                var output = WebPData()
                WebPDataInit(&output)
                defer { WebPDataClear(&output) }
                guard WebPMuxAssemble(mux, &output) == WEBP_MUX_OK, let bytes = output.bytes else {
                    throw WebPErrors.encode("cannot assemble the WebP with its ICC profile")
                }
                return Array(UnsafeBufferPointer(start: bytes, count: output.size))
            }
        }
    }
}
