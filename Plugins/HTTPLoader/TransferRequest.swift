import ImageCore

/// What one transfer sends; its ``key`` decides which callers share it.
struct TransferRequest: Sendable {
    let request: ImageRequest
    /// Uses the client without certificate verification (``ImageOptions/allowInvalidSSLCertificates``).
    let insecure: Bool
    /// Stores `Set-Cookie` answers in the loader's jar (``ImageOptions/handleCookies``).
    let handleCookies: Bool
    /// Method, URL and every header after the modifiers (they may change the response), plus the options that
    /// change the transfer. Names are lowercased and sorted so header order does not split identical requests.
    let key: String

    init(request: ImageRequest, insecure: Bool, handleCookies: Bool) {
        self.request = request
        self.insecure = insecure
        self.handleCookies = handleCookies
        let headers = request.headers.map { "\($0.name.lowercased()):\($0.value)" }.sorted().joined(separator: "\n")
        key =
            "\(request.method) \(request.url.absoluteString)\n\(headers)\n"
            + "insecure=\(insecure) cookies=\(handleCookies) timeout=\(request.timeout.map { "\($0)" } ?? "-")"
    }
}
