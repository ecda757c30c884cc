@_spi(Fuzzing) import DiskCache

/// libFuzzer entry point: the input is an entry file of `DiskCache`. Decoding returns a typed error or an entry
/// whose body lies inside the file; it never traps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let buffer = UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : count)
    for limit in [Int.max, count / 2] {
        do {
            let entry = try DiskEntryCodec.decode(buffer, maxBodySize: limit)
            guard entry.bodyOffset >= DiskEntryCodec.fixedHeaderSize, entry.bodyOffset <= count,
                count - entry.bodyOffset <= limit
            else { fatalError("body at \(entry.bodyOffset) of a \(count)-byte file (limit \(limit))") }
        } catch {
            _ = error
        }
    }
    return 0
}
