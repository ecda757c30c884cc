import FuzzSupport

/// libFuzzer entry point: builds an image and encode options from the input, encodes, decodes back and checks
/// the result; then runs a transformer with parameters from the input (see `FuzzHarness.roundTrip`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.roundTrip(FuzzInput(bytes, count))
    return 0
}
