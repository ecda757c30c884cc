import Foundation
import HTTPLoader

/// libFuzzer entry point: the input (as UTF-8) is a response head's header lines, `name: value` per line. The
/// header parsers (content type, length, entity tag, dates, Cache-Control) must return, and their results hold
/// their own invariants: a length is never negative, an entity tag parses back to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : count), as: UTF8.self)
    var fields: [(name: String, value: String)] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        fields.append((String(parts[0]), parts.count > 1 ? String(parts[1]) : ""))
    }
    let metadata = HTTPResponseParsing.metadata(statusCode: 200, headers: fields, url: nil)
    if let length = metadata.expectedContentLength, length < 0 { fatalError("negative length \(length)") }
    if let tag = metadata.etag, HTTPResponseParsing.entityTag(tag) != tag {
        fatalError("entity tag \(tag.debugDescription) does not parse back to itself")
    }
    for (_, value) in fields {
        _ = HTTPResponseParsing.httpDate(value)
        _ = HTTPResponseParsing.contentType(value)
        _ = HTTPResponseParsing.maxAge(value)
        if let length = HTTPResponseParsing.contentLength(value), length < 0 { fatalError("negative length") }
    }
    return 0
}
