import FuzzSupport

/// libFuzzer entry point: feeds the input to the incremental decoder of whichever coder sniffs it, cut at split
/// points derived from the input (see `FuzzHarness.progressive`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.progressive(FuzzInput(bytes, count))
    return 0
}
