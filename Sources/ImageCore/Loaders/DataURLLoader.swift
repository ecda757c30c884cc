import Foundation

/// Loads `data:` URLs (RFC 2397): `data:[<media type>][;base64],<data>`, decoded in memory.
///
/// A malformed data URL fails with `invalidURL` (and is blocked: it will never become valid).
public struct DataURLLoader: ImageLoader {
    /// Creates a loader.
    public init() {}

    /// True for `data:` URLs.
    public func canRequestImage(for url: URL) -> Bool { url.scheme?.lowercased() == "data" }

    /// Decodes the URL's payload synchronously (it is already in memory).
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        completion(Self.parse(url.absoluteString))
        return CancellableOperation()
    }

    /// Parses a data URL string into its bytes and media type.
    public static func parse(_ string: String) -> Result<LoadedImageData, ImageError> {
        guard string.lowercased().hasPrefix("data:"), let comma = string.firstIndex(of: ",") else {
            return .failure(.invalidURL("not a data URL"))
        }
        let header = string[string.index(string.startIndex, offsetBy: 5)..<comma]
        let payload = string[string.index(after: comma)...]
        var parts = header.split(separator: ";", omittingEmptySubsequences: false).map { String($0) }
        let isBase64 = parts.last?.lowercased() == "base64"
        if isBase64 { parts.removeLast() }
        let mediaType = parts.first.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        let data: Data?
        if isBase64 {
            let cleaned = (payload.removingPercentEncoding ?? String(payload)).filter { !$0.isWhitespace }
            data = Data(base64Encoded: cleaned, options: .ignoreUnknownCharacters)
        } else {
            data = payload.removingPercentEncoding.map { Data($0.utf8) }
        }
        guard let data else { return .failure(.invalidURL("data URL payload is not valid base64 or percent-encoding")) }
        return .success(LoadedImageData(data: data, response: ResponseMetadata(contentType: mediaType)))
    }
}
