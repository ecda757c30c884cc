import Foundation
import Hummingbird
import ThumbnailQuery
import WebImage

/// Makes thumbnails through the SDK and encodes them in the negotiated format.
///
/// The ImageManager does the heavy lifting: a memory + disk cache (the original download on disk, the resized
/// image in memory and on disk), one download and one resize for concurrent requests of the same thumbnail,
/// the byte budget (the loader's maximum response size) and the pixel budget (checked from the header).
///
/// Animated sources (GIF, animated WebP) give a still thumbnail of their first frame at the requested size. The
/// core skips transformers for animated images unless `.transformAnimatedImage`, which would resize every frame
/// only for the encoder to keep the first; decoding with `.decodeFirstFrameOnly` instead costs one frame of
/// work and memory whatever the frame count, so a hostile animation cannot make a thumbnail expensive.
struct ThumbnailRenderer: Sendable {
    struct Thumbnail: Sendable {
        let data: Data
        let format: ImageFormat
        let etag: String
        let cacheType: ImageCacheType
    }

    let manager: ImageManager
    let maxSourcePixels: Int
    let quality: Double

    /// Renders `request` in `encoding`. The encoding is part of the thumbnail's cache key, and the cached
    /// thumbnail (disk, Redis) is stored in that encoding, so entries of different formats never mix and a
    /// cached thumbnail is never re-encoded from another lossy format.
    func render(_ request: ThumbnailRequest, encoding: ContentNegotiation.Encoding) async throws -> Thumbnail {
        let result: ImageResult
        do {
            result = try await manager.loadImage(
                with: request.source, options: [.decodeFirstFrameOnly],
                context: context(for: request, encoding: encoding))
        } catch {
            throw Self.httpError(for: error)
        }
        let image = result.image
        let format = encoding.format(for: image)
        let options = ImageEncodeOptions(quality: quality, firstFrameOnly: true)
        let data = try await manager.workPool.run {
            try CodersManager.shared.encode(image, as: format, options: options)
        }
        return Thumbnail(data: data, format: format, etag: Self.etag(for: data), cacheType: result.cacheType)
    }

    /// The load's context: the resize keyed by the encoding too, the pixel budget, and a serializer storing the
    /// thumbnail in the encoding's format (AVIF at libavif's fast speed).
    func context(for request: ThumbnailRequest, encoding: ContentNegotiation.Encoding) -> ImageContext {
        var context = ImageContext()
        let resize = ResizeTransformer(size: request.size, mode: request.fit.resizeMode)
        context.imageTransformer = BlockTransformer(key: "\(resize.transformerKey)-as-\(encoding.rawValue)") {
            image, key in try resize.transform(image, forKey: key)
        }
        context.imageDecodeOptions = ImageDecodeOptions(maxPixelCount: maxSourcePixels)
        let quality = quality
        context.cacheSerializer = BlockCacheSerializer { image, _, _ in
            try? CodersManager.shared.encode(
                image, as: encoding.format(for: image),
                options: ImageEncodeOptions(quality: quality, effort: .fast, firstFrameOnly: true))
        }
        return context
    }

    /// A strong ETag from the bytes (FNV-1a, 64 bits): equal thumbnails, equal tags, across restarts.
    static func etag(for data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return "\"\(String(hash, radix: 16))-\(data.count)\""
    }

    /// Maps the SDK's error codes to the status a client can act on.
    static func httpError(for error: ImageError) -> HTTPError {
        if error.underlying is AllowlistRedirectLoader.RedirectRefused {
            return HTTPError(.forbidden, message: "source redirect refused: \(error.message ?? "")")
        }
        let status: HTTPResponse.Status =
            switch error.code {
            case .imageTooLarge, .downloadTooLarge: .contentTooLarge
            case .badImageData, .noCoder, .invalidDownloadContentType: .unsupportedMediaType
            case .invalidDownloadStatusCode where error.statusCode == 404 || error.statusCode == 410: .notFound
            case .timedOut: .gatewayTimeout
            case .invalidURL: .badRequest
            default: .badGateway
            }
        return HTTPError(status, message: "source image: \(error.code) (\(error.message ?? error.stage.rawValue))")
    }
}
