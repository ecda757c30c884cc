import FuzzSupport
import HEIFCoder

/// libFuzzer entry point: decodes the input with `HEIFCoder` under several option sets (see `FuzzHarness.decode`).
/// libFuzzer's `-timeout` makes a libheif loop on a malformed item graph a finding, like a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.decode(FuzzInput(bytes, count), withCoder: HEIFCoder.shared)
    return 0
}
