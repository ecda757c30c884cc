import Foundation
import Hummingbird
import WebImage

/// The parameters of `GET /thumbnail?url=…&w=…&h=…&fit=…`, validated.
struct ThumbnailRequest: Sendable {
    /// How the source is fitted into `w × h`.
    enum Fit: String, Sendable {
        /// The whole image fits inside; one side may be shorter (default).
        case contain
        /// The image covers the box and is cropped to exactly `w × h`.
        case cover
        /// Stretched to exactly `w × h`.
        case fill

        var resizeMode: ResizeTransformer.Mode {
            switch self {
            case .contain: .aspectFit
            case .cover: .aspectFill
            case .fill: .fill
            }
        }
    }

    let source: URL
    let size: PixelSize
    let fit: Fit

    /// Reads the query parameters (already percent-decoded); a missing `w` or `h` takes the other's value.
    ///
    /// - Throws: `HTTPError(.badRequest)` naming the bad parameter.
    init(query: [String: String], maxSide: Int) throws {
        guard let text = query["url"], let url = URL(string: text), url.host != nil,
            url.scheme?.lowercased() == "http" || url.scheme?.lowercased() == "https"
        else {
            throw HTTPError(.badRequest, message: "url must be an absolute http(s) URL")
        }
        func side(_ name: String) throws -> Int? {
            guard let value = query[name] else { return nil }
            guard let number = Int(value), (1...maxSide).contains(number) else {
                throw HTTPError(.badRequest, message: "\(name) must be an integer from 1 to \(maxSide)")
            }
            return number
        }
        let w = try side("w")
        let h = try side("h")
        guard let width = w ?? h, let height = h ?? w else {
            throw HTTPError(.badRequest, message: "give w, h or both")
        }
        guard let fit = Fit(rawValue: query["fit"] ?? "contain") else {
            throw HTTPError(.badRequest, message: "fit must be contain, cover or fill")
        }
        self.source = url
        self.size = PixelSize(width: width, height: height)
        self.fit = fit
    }
}
