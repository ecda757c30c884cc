/// Picks the thumbnail's format from the client's `Accept` header.
enum ContentNegotiation {
    /// True when `accept` lists `image/webp` with a non-zero quality.
    ///
    /// Only an explicit `image/webp` counts: `image/*` and `*/*` are sent by clients that cannot decode WebP.
    static func acceptsWebP(_ accept: String?) -> Bool {
        guard let accept else { return false }
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.first == "image/webp" else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
        return false
    }

    /// True when `ifNoneMatch` (a comma-separated list, or `*`) contains `etag`, ignoring weak `W/` prefixes.
    static func matches(ifNoneMatch: String?, etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        let strip = { (tag: Substring) in
            let trimmed = tag.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
        }
        return ifNoneMatch.split(separator: ",").contains { strip($0) == "*" || strip($0) == strip(etag[...]) }
    }
}
