import Foundation

/// What a loader learned from the response besides the bytes.
///
/// A value type (each copy changes alone) whose fields live in one shared, immutable box: a response travels by
/// value into every caller's result, into events, errors and verdicts on its way, and copying it is one reference
/// count rather than one per field (a URL, three strings and a dictionary). Setting a field makes a new box, so
/// loaders build it whole with ``init(url:statusCode:contentType:etag:lastModified:maxAge:expectedContentLength:headers:)``
/// and response modifiers pay for what they change.
public struct ResponseMetadata: Hashable, Sendable {
    /// The fields, as one value: what equality and hashing compare.
    private struct Fields: Hashable, Sendable {
        var url: URL?
        var statusCode: Int?
        var contentType: String?
        var etag: String?
        var lastModified: String?
        var maxAge: Int?
        var expectedContentLength: Int?
        var headers: [String: String]
        var extendedData: Data?
    }

    /// Never mutated: a change replaces the box, so sharing one between copies and threads is safe.
    private final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var storage: Storage

    private mutating func update(_ change: (inout Fields) -> Void) {
        var fields = storage.fields
        change(&fields)
        storage = Storage(fields)
    }

    /// The final URL (after redirects).
    public var url: URL? {
        get { storage.fields.url }
        set { update { $0.url = newValue } }
    }
    /// The HTTP status, nil for non-HTTP loaders.
    public var statusCode: Int? {
        get { storage.fields.statusCode }
        set { update { $0.statusCode = newValue } }
    }
    /// The content type (`image/png`), without parameters.
    public var contentType: String? {
        get { storage.fields.contentType }
        set { update { $0.contentType = newValue } }
    }
    /// The `ETag` validator.
    public var etag: String? {
        get { storage.fields.etag }
        set { update { $0.etag = newValue } }
    }
    /// The `Last-Modified` validator, verbatim.
    public var lastModified: String? {
        get { storage.fields.lastModified }
        set { update { $0.lastModified = newValue } }
    }
    /// `Cache-Control: max-age`, seconds.
    public var maxAge: Int? {
        get { storage.fields.maxAge }
        set { update { $0.maxAge = newValue } }
    }
    /// The expected length (`Content-Length`).
    public var expectedContentLength: Int? {
        get { storage.fields.expectedContentLength }
        set { update { $0.expectedContentLength = newValue } }
    }
    /// Response headers, names lowercased.
    public var headers: [String: String] {
        get { storage.fields.headers }
        set { update { $0.headers = newValue } }
    }

    /// The loader's own small blob, stored as the entry's ``CacheEntryMetadata/extendedData`` with bytes kept from this
    /// response, and handed back with them: what the loader knows of the bytes beyond HTTP (the hops they came
    /// through, a digest it took), which a later answer from the cache still needs.
    ///
    /// A loader that revalidates finds the stored blob in ``ImageContext/loaderCachedMetadata``; on a 304 it may
    /// return an updated one on the error's ``ImageError/response``, which the renewed entry then keeps (else it keeps
    /// its own). Nil when the loader keeps nothing; a level that bounds extended data (DiskCache: 2 KiB) refuses an
    /// entry whose blob does not fit.
    public var extendedData: Data? {
        get { storage.fields.extendedData }
        set { update { $0.extendedData = newValue } }
    }

    /// The response's `Cache-Control` directives (from ``headers``).
    public var cacheControl: CacheControl { CacheControl(headerValue: storage.fields.headers["cache-control"]) }

    /// Creates metadata.
    public init(
        url: URL? = nil, statusCode: Int? = nil, contentType: String? = nil, etag: String? = nil,
        lastModified: String? = nil, maxAge: Int? = nil, expectedContentLength: Int? = nil,
        headers: [String: String] = [:]
    ) {
        // Loaders that know nothing of a response (files, data URLs) share one empty box instead of making one.
        if url == nil, statusCode == nil, contentType == nil, etag == nil, lastModified == nil, maxAge == nil,
            expectedContentLength == nil, headers.isEmpty
        {
            storage = Self.empty
            return
        }
        storage = Storage(
            Fields(
                url: url, statusCode: statusCode, contentType: contentType, etag: etag, lastModified: lastModified,
                maxAge: maxAge, expectedContentLength: expectedContentLength, headers: headers))
    }

    private static let empty = Storage(Fields(headers: [:]))

    public static func == (lhs: ResponseMetadata, rhs: ResponseMetadata) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) { storage.fields.hash(into: &hasher) }
}
