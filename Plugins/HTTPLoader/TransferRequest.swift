import ImageCore
import NIOHTTP1

/// What one transfer sends; its ``key`` decides which callers share it.
///
/// A class, immutable: the request passes from the caller through the loader's queue to its transfer, and a
/// copy of a struct this size was a dozen reference counts each time.
final class TransferRequest: Sendable {
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
        /// The fields' hash, computed once: the loader looks a key up about four times per transfer (join or
        /// insert, then the removal), and hashing the URL and the default headers (User-Agent, Accept) each time
        /// was about a twentieth of what the loader adds per request on top of its client.
        private let fieldsHash: Int

        init(
            method: String, url: String, headers: [String], insecure: Bool, handleCookies: Bool,
            cookiePartition: String?, deadline: UInt64, privateTo: UInt64?
        ) {
            self.method = method
            self.url = url
            self.headers = headers
            self.insecure = insecure
            self.handleCookies = handleCookies
            self.cookiePartition = cookiePartition
            self.deadline = deadline
            self.privateTo = privateTo
            var hasher = Hasher()
            hasher.combine(method)
            hasher.combine(url)
            hasher.combine(headers)
            hasher.combine(insecure)
            hasher.combine(handleCookies)
            hasher.combine(cookiePartition)
            hasher.combine(deadline)
            hasher.combine(privateTo)
            fieldsHash = hasher.finalize()
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.fieldsHash == rhs.fieldsHash && lhs.url == rhs.url && lhs.method == rhs.method
                && lhs.headers == rhs.headers && lhs.insecure == rhs.insecure && lhs.handleCookies == rhs.handleCookies
                && lhs.cookiePartition == rhs.cookiePartition && lhs.deadline == rhs.deadline
                && lhs.privateTo == rhs.privateTo
        }

        func hash(into hasher: inout Hasher) { hasher.combine(fieldsHash) }
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
    /// `request.headers` as AsyncHTTPClient sends them, when the loader had them made already (its default
    /// headers, unchanged); nil makes them per hop.
    let wireHeaders: HTTPHeaders?

    /// - Parameters:
    ///   - headerKey: ``keyParts(_:)`` of the request's headers when the caller has them already (the loader's
    ///     default headers, unchanged); nil computes them.
    ///   - wireHeaders: ``wireHeaders(_:)`` of the request's headers when the caller has them already; nil makes
    ///     them per hop.
    ///   - privateTo: The caller the transfer belongs to alone (its context has a request modifier), or nil.
    init(
        request: ImageRequest, headerKey: [String]? = nil, wireHeaders: HTTPHeaders? = nil, insecure: Bool,
        handleCookies: Bool, cookiePartition: String?, timeout: Double, privateTo: UInt64?
    ) {
        self.request = request
        self.insecure = insecure
        self.handleCookies = handleCookies
        self.cookiePartition = cookiePartition
        self.timeout = timeout
        self.wireHeaders = wireHeaders
        key = Key(
            method: request.method, url: request.url.absoluteString,
            headers: headerKey ?? Self.keyParts(request.headers), insecure: insecure,
            handleCookies: handleCookies, cookiePartition: cookiePartition,
            deadline: TransferPace.nanoseconds(timeout), privateTo: privateTo)
    }

    /// Headers as AsyncHTTPClient sends them, in order.
    static func wireHeaders(_ headers: [(name: String, value: String)]) -> HTTPHeaders {
        var wire = HTTPHeaders()
        wire.reserveCapacity(headers.count)
        for (name, value) in headers { wire.add(name: name, value: value) }
        return wire
    }

    /// Headers as the key compares them: `name:value` with the name lowercased, sorted (order is ignored).
    static func keyParts(_ headers: [(name: String, value: String)]) -> [String] {
        var parts = headers.map { $0.name.lowercased() + ":" + $0.value }
        if parts.count > 1 { parts.sort() }
        return parts
    }
}
