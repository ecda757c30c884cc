import Foundation
import ImageCore
import NIOHTTP1

/// Reads the response facts the SDK cares about out of an HTTP response head.
enum HTTPResponseParsing {
    static func metadata(head: HTTPResponseHead, url: URL) -> ResponseMetadata {
        var headers: [String: String] = [:]
        for (name, value) in head.headers {
            let key = name.lowercased()
            if let existing = headers[key] {
                headers[key] = existing + ", " + value
            } else {
                headers[key] = value
            }
        }
        return ResponseMetadata(
            url: url, statusCode: Int(head.status.code), contentType: contentType(headers["content-type"]),
            etag: headers["etag"], lastModified: headers["last-modified"], maxAge: maxAge(headers["cache-control"]),
            expectedContentLength: headers["content-length"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) },
            headers: headers)
    }

    /// `image/png; charset=x` → `image/png` (lowercased); nil for a missing or empty value.
    static func contentType(_ value: String?) -> String? {
        guard let value else { return nil }
        let type = value.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        return type?.isEmpty == false ? type : nil
    }

    /// `max-age` of a Cache-Control value in seconds; 0 for `no-cache` / `no-store` without a max-age.
    static func maxAge(_ value: String?) -> Int? {
        guard let value else { return nil }
        var noCache = false
        for directive in value.lowercased().split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            switch parts[0] {
            case "max-age":
                if parts.count == 2,
                    let seconds = Int(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
                {
                    return max(0, seconds)
                }
            case "no-cache", "no-store":
                noCache = true
            default:
                continue
            }
        }
        return noCache ? 0 : nil
    }

    /// True when `contentType` is in `allowed`, which may hold wildcards such as `image/*` or `*/*`.
    static func isAcceptable(contentType: String?, allowed: Set<String>?) -> Bool {
        guard let allowed, let contentType else { return true }
        if allowed.contains(contentType) || allowed.contains("*/*") { return true }
        guard let slash = contentType.firstIndex(of: "/") else { return false }
        return allowed.contains(contentType[..<slash] + "/*")
    }
}
