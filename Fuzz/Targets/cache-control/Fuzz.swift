import ImageCore

/// libFuzzer entry point: the input (as UTF-8, invalid bytes replaced) is a `Cache-Control` header value. The
/// parser must return, and the ages it reports are never negative.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let value = String(decoding: UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : count), as: UTF8.self)
    let control = CacheControl(headerValue: value)
    for age in [control.maxAge, control.sharedMaxAge] {
        if let age, age < 0 { fatalError("negative age \(age) from \(value.debugDescription)") }
    }
    _ = CacheControl(headerValue: value.lowercased())
    return 0
}
