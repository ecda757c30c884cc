import FuzzSupport

/// libFuzzer entry point: decodes the input with `PNGCoder` under several option sets (see `FuzzHarness.decode`),
/// seeded with APNGs only (`corpus-apng`), so the runs spend their time in the acTL/fcTL/fdAT walk, the per-frame
/// streams and the compositor rather than in still-PNG paths `png-decode` covers.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.decode(FuzzInput(bytes, count), with: .png)
    return 0
}
