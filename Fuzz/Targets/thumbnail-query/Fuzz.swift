import Foundation
import ThumbnailQuery

/// libFuzzer entry point for what ThumbnailServer reads from a request.
///
/// The input (UTF-8, invalid bytes replaced) is split at newlines into the query (`key=value` pairs separated by
/// `&`, as the server sees them after percent-decoding: first value wins), an `Accept` value, an `If-None-Match`
/// value and allowlist entries. Parsing must return or throw `ThumbnailRequest.Invalid`, and what it accepts must
/// hold the promises the server relies on: an http(s) URL with a host, both sides in `1...maxSide`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : count), as: UTF8.self)
    let lines = text.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
    let field = { (index: Int) -> String? in index < lines.count ? lines[index] : nil }

    var query: [String: String] = [:]
    for pair in (field(0) ?? "").split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let key = String(parts[0])
        if query[key] == nil { query[key] = parts.count > 1 ? String(parts[1]) : "" }
    }
    let maxSide = 2048
    do {
        let request = try ThumbnailRequest(query: query, maxSide: maxSide)
        let scheme = request.source.scheme?.lowercased()
        guard scheme == "http" || scheme == "https", let host = request.source.host, !host.isEmpty else {
            fatalError("accepted a source that is not an absolute http(s) URL: \(request.source)")
        }
        guard (1...maxSide).contains(request.size.width), (1...maxSide).contains(request.size.height) else {
            fatalError("accepted a size outside 1...\(maxSide): \(request.size)")
        }
        _ = request.fit.resizeMode
        // An allowlist naming the source's host admits it.
        guard OriginAllowlist([host.lowercased()]).allows(request.source) else {
            fatalError("an allowlist of \(host) refused \(request.source)")
        }
        let allowlist = OriginAllowlist((field(3) ?? "").split(separator: ",").map(String.init))
        _ = allowlist.allows(request.source)
    } catch {
        if error.message.isEmpty { fatalError("a refusal without a message") }
    }

    let accept = field(1)
    _ = ContentNegotiation.encoding(accept: accept, canEncodeAVIF: true)
    _ = ContentNegotiation.encoding(accept: accept, canEncodeAVIF: false)
    let etag = field(2) ?? ""
    _ = ContentNegotiation.matches(ifNoneMatch: etag, etag: "\"abc\"")
    if !etag.isEmpty, !etag.contains(","), etag.trimmingCharacters(in: .whitespaces) == etag,
        !ContentNegotiation.matches(ifNoneMatch: etag, etag: etag)
    {
        fatalError("If-None-Match \(etag.debugDescription) does not match itself")
    }
    return 0
}
