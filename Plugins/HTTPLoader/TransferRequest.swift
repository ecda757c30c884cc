import ImageCore

/// What one transfer sends; its ``key`` decides which callers share it.
struct TransferRequest: Sendable {
    /// Which requests share a transfer: the same method, URL and headers after the modifiers (names lowercased,
    /// order ignored; credential-bearing headers compared in full, so different credentials never merge), the
    /// same transfer options — certificate checks, cookie handling and its partition, the deadline — and not
    /// private to one caller.
    struct Key: Hashable, Sendable {
        let method: String
        let url: String
        let headers: [String]
        let insecure: Bool
        let handleCookies: Bool
        /// Where the transfer stores the cookies it receives (``ImageContext/cachePartitionKey``).
        let cookiePartition: String?
        /// The deadline in nanoseconds (`UInt64.max`: none), so equal deadlines compare equal however spelled.
        let deadline: UInt64
        let privateTo: UInt64?
    }

    let request: ImageRequest
    /// Uses the client without certificate verification (``ImageOptions/allowInvalidSSLCertificates``).
    let insecure: Bool
    /// Stores `Set-Cookie` answers in the loader's jar (``ImageOptions/handleCookies``).
    let handleCookies: Bool
    /// The jar partition cookies are read from and stored into; nil for unpartitioned loads.
    let cookiePartition: String?
    /// The total deadline in seconds (``TransferPace``).
    let timeout: Double
    let key: Key

    /// - Parameters:
    ///   - headerKey: ``keyParts(_:)`` of the request's headers when the caller has them already (the loader's
    ///     default headers, unchanged); nil computes them.
    ///   - privateTo: The caller the transfer belongs to alone (its context has a request modifier), or nil.
    init(
        request: ImageRequest, headerKey: [String]? = nil, insecure: Bool, handleCookies: Bool,
        cookiePartition: String?, timeout: Double, privateTo: UInt64?
    ) {
        self.request = request
        self.insecure = insecure
        self.handleCookies = handleCookies
        self.cookiePartition = cookiePartition
        self.timeout = timeout
        key = Key(
            method: request.method, url: request.url.absoluteString,
            headers: headerKey ?? Self.keyParts(request.headers), insecure: insecure,
            handleCookies: handleCookies, cookiePartition: cookiePartition,
            deadline: TransferPace.nanoseconds(timeout), privateTo: privateTo)
    }

    /// Headers as the key compares them: `name:value` with the name lowercased, sorted (order is ignored).
    static func keyParts(_ headers: [(name: String, value: String)]) -> [String] {
        var parts = headers.map { $0.name.lowercased() + ":" + $0.value }
        if parts.count > 1 { parts.sort() }
        return parts
    }
}
