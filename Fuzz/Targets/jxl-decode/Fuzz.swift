import FuzzSupport

/// libFuzzer entry point: decodes the input with `JXLCoder` under several option sets (see `FuzzHarness.decode`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.decode(FuzzInput(bytes, count), with: .jxl)
    return 0
}
