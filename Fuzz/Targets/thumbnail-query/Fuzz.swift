import Foundation
import ImageCore
import ImageServiceQuery

/// libFuzzer entry point for what ImageService reads from a request and from an origin's answer.
///
/// The input (UTF-8, invalid bytes replaced) is split at newlines into a raw query string, an `Accept` value, an
/// `If-None-Match` value (also read as a `Cache-Control` and an `Expires`) and allowlist entries. Parsing must return or throw its typed error, and what it accepts
/// must hold the promises the server relies on: a source that re-parses to itself, an http(s) scheme, a host that
/// an allowlist naming it admits, a box within the limits; an address that prints and parses back to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : count), as: UTF8.self)
    let lines = text.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
    let field = { (index: Int) -> String? in index < lines.count ? lines[index] : nil }

    let limits = OptionsParser.Limits(maxSide: 2048)
    let parser = OptionsParser(limits: limits)
    do {
        let options = try parser.parse(try QueryString.pairs(field(0) ?? ""))
        let source = options.source
        guard source.scheme == "http" || source.scheme == "https", !source.host.isEmpty else {
            fatalError("accepted a source that is not an absolute http(s) URL: \(source)")
        }
        guard let again = try? SourceURL(source.canonical), again == source else {
            fatalError("the canonical form \(source.canonical) does not parse back to itself")
        }
        guard (1...limits.maxSide).contains(options.box.width), (1...limits.maxSide).contains(options.box.height) else {
            fatalError("accepted a box outside 1...\(limits.maxSide): \(options.box)")
        }
        _ = options.canonicalDescription
        if source.literalAddress == nil {
            guard let list = try? HostAllowlist([source.host]), list.allows(source) else {
                fatalError("an allowlist of \(source.host) refused \(source)")
            }
        }
        if let list = try? HostAllowlist((field(3) ?? "").split(separator: ",").map(String.init)) {
            _ = list.allows(source)
        }
        if let address = source.literalAddress {
            guard IPAddress(address.description) == address else { fatalError("\(address) does not round-trip") }
            _ = AddressPolicy().refusal(for: address)
        }
    } catch let error as OptionsParser.Invalid {
        if error.message.isEmpty { fatalError("a refusal without a message") }
    } catch {
        // QueryString.Invalid: bad percent-encoding, refused as such.
    }

    let accept = field(1)
    _ = ContentNegotiation.encoding(accept: accept, canEncodeAVIF: true)
    _ = ContentNegotiation.encoding(accept: accept, canEncodeAVIF: false)
    let etag = field(2) ?? ""
    // Freshness from hostile response headers: a lifetime is never negative, and reuse stays in the clamp.
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let headers = ["cache-control": etag, "expires": etag, "age": accept ?? "", "date": field(3) ?? ""]
    if let lifetime = FreshnessPolicy.ownLifetime(headers: headers, now: now), !(lifetime >= 0) {
        fatalError("a negative or NaN lifetime \(lifetime) from \(headers)")
    }
    let policy = FreshnessPolicy(minimumTTL: 5, maximumTTL: 600)
    let reuse = policy.freshness(headers: headers, now: now).reuseUntil.timeIntervalSince(now)
    guard reuse >= 5 && reuse <= 600 else { fatalError("reuse \(reuse) s outside the clamp for \(headers)") }
    _ = ConditionalRequest.isNotModified(ifNoneMatch: etag, ifModifiedSince: accept, etag: "\"abc\"", lastModified: nil)
    if !etag.isEmpty, !etag.contains(","), etag.trimmingCharacters(in: .whitespaces) == etag,
        !ConditionalRequest.matches(ifNoneMatch: etag, etag: etag)
    {
        fatalError("If-None-Match \(etag.debugDescription) does not match itself")
    }
    return 0
}
