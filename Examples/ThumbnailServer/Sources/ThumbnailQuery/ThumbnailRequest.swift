import Foundation
import ImageCore
import ImageTransformers

/// The parameters of `GET /thumbnail?url=…&w=…&h=…&fit=…`, validated.
///
/// Kept apart from the server (no Hummingbird) so the fuzz target `thumbnail-query` runs it on arbitrary input.
public struct ThumbnailRequest: Sendable {
    /// How the source is fitted into `w × h`.
    public enum Fit: String, Sendable {
        /// The whole image fits inside; one side may be shorter (default).
        case contain
        /// The image covers the box and is cropped to exactly `w × h`.
        case cover
        /// Stretched to exactly `w × h`.
        case fill

        /// The resize mode that fits this way.
        public var resizeMode: ResizeTransformer.Mode {
            switch self {
            case .contain: .aspectFit
            case .cover: .aspectFill
            case .fill: .fill
            }
        }
    }

    /// A query the server refuses with 400 Bad Request; `message` names the bad parameter.
    public struct Invalid: Error, Sendable, Equatable {
        /// What was wrong, for the response body.
        public let message: String
    }

    /// The absolute http(s) URL of the source image.
    public let source: URL
    /// The box the thumbnail fits, each side in `1...maxSide`.
    public let size: PixelSize
    /// How the source is fitted into ``size``.
    public let fit: Fit

    /// Reads the query parameters (already percent-decoded); a missing `w` or `h` takes the other's value.
    ///
    /// - Throws: ``Invalid`` naming the bad parameter.
    public init(query: [String: String], maxSide: Int) throws(Invalid) {
        guard let text = query["url"], let url = URL(string: text), let host = url.host, !host.isEmpty,
            url.scheme?.lowercased() == "http" || url.scheme?.lowercased() == "https"
        else {
            throw Invalid(message: "url must be an absolute http(s) URL")
        }
        func side(_ name: String) throws(Invalid) -> Int? {
            guard let value = query[name] else { return nil }
            // Compared, not `(1...maxSide).contains`: a range with maxSide < 1 would trap.
            guard let number = Int(value), number >= 1, number <= maxSide else {
                throw Invalid(message: "\(name) must be an integer from 1 to \(maxSide)")
            }
            return number
        }
        let w = try side("w")
        let h = try side("h")
        guard let width = w ?? h, let height = h ?? w else {
            throw Invalid(message: "give w, h or both")
        }
        guard let fit = Fit(rawValue: query["fit"] ?? "contain") else {
            throw Invalid(message: "fit must be contain, cover or fill")
        }
        self.source = url
        self.size = PixelSize(width: width, height: height)
        self.fit = fit
    }
}
