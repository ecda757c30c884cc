import Foundation

/// A loader-neutral description of a request, for ``RequestModifier``.
public struct ImageRequest: Sendable {
    /// The URL.
    public var url: URL
    /// The method (GET).
    public var method: String
    /// Header fields in order; names compare case-insensitively.
    public var headers: [(name: String, value: String)]
    /// Per-request timeout in seconds; nil uses the loader's.
    public var timeout: Double?

    /// Creates a request.
    public init(url: URL, method: String = "GET", headers: [(name: String, value: String)] = [], timeout: Double? = nil)
    {
        self.url = url
        self.method = method
        self.headers = headers
        self.timeout = timeout
    }

    /// The first value of header `name` (case-insensitive); setting replaces every field of that name,
    /// nil removes them.
    public subscript(header name: String) -> String? {
        get { headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value }
        set {
            headers.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            if let newValue { headers.append((name: name, value: newValue)) }
        }
    }
}

/// Rewrites a request before it is sent; returning nil cancels the load.
///
/// Threading: called on the loader's thread; must be fast and thread-safe.
public protocol RequestModifier: Sendable {
    /// The request to send, or nil to cancel.
    func modifiedRequest(for request: ImageRequest) -> ImageRequest?
}

/// Rewrites or vets a response's metadata; returning nil fails the load with `invalidDownloadResponse`.
public protocol ResponseModifier: Sendable {
    /// The response to continue with, or nil to fail.
    func modifiedResponse(for response: ResponseMetadata) -> ResponseMetadata?
}

/// Turns downloaded bytes into image bytes (e.g. decrypts or unwraps); returning nil fails with `badImageData`.
public protocol DownloadDecryptor: Sendable {
    /// The image bytes for `data`.
    func decryptedData(with data: Data, response: ResponseMetadata?) -> Data?
}

/// A request modifier backed by a closure.
public struct BlockRequestModifier: RequestModifier {
    private let body: @Sendable (ImageRequest) -> ImageRequest?
    /// Creates the modifier.
    public init(_ body: @escaping @Sendable (ImageRequest) -> ImageRequest?) { self.body = body }
    /// Calls the closure.
    public func modifiedRequest(for request: ImageRequest) -> ImageRequest? { body(request) }
}

/// A response modifier backed by a closure.
public struct BlockResponseModifier: ResponseModifier {
    private let body: @Sendable (ResponseMetadata) -> ResponseMetadata?
    /// Creates the modifier.
    public init(_ body: @escaping @Sendable (ResponseMetadata) -> ResponseMetadata?) { self.body = body }
    /// Calls the closure.
    public func modifiedResponse(for response: ResponseMetadata) -> ResponseMetadata? { body(response) }
}

/// A decryptor backed by a closure.
public struct BlockDownloadDecryptor: DownloadDecryptor {
    private let body: @Sendable (Data, ResponseMetadata?) -> Data?
    /// Creates the decryptor.
    public init(_ body: @escaping @Sendable (Data, ResponseMetadata?) -> Data?) { self.body = body }
    /// Calls the closure.
    public func decryptedData(with data: Data, response: ResponseMetadata?) -> Data? { body(data, response) }
}
