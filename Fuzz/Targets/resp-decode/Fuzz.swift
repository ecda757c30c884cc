import RedisCache

/// libFuzzer entry point: the input is what a Redis server sent. The RESP decoder returns values, asks for more
/// bytes or throws its typed error (within its limits); it never traps, and what it consumed is within the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : count))
    var limits = RESPDecoder.Limits()
    limits.maxDepth = min(limits.maxDepth, 32)
    do {
        let (_, remaining) = try RESPDecoder(limits: limits).decodeAll(input)
        if remaining < 0 || remaining > input.count { fatalError("\(remaining) bytes remain of \(input.count)") }
    } catch {
        _ = error
    }
    return 0
}
