// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for the SDK, a separate package so users never build them. Build and run with `make fuzz`
// (scripts/fuzz.sh): `swift build --package-path Fuzz --sanitize=fuzzer --sanitize=address`. Each target is an
// executable whose only entry point is `LLVMFuzzerTestOneInput`; libFuzzer supplies `main`. To add a target: a
// folder under Targets/, one line below, one line in scripts/fuzz.sh's target table (see CONTRIBUTING.md).

let sdk: [Target.Dependency] = [
    .product(name: "ImageCore", package: "WebImage"),
    .product(name: "PNGCoder", package: "WebImage"),
    .product(name: "JPEGCoder", package: "WebImage"),
    .product(name: "WebPCoder", package: "WebImage"),
    .product(name: "GIFCoder", package: "WebImage"),
    .product(name: "AVIFCoder", package: "WebImage"),
    .product(name: "HEIFCoder", package: "WebImage"),
    .product(name: "JXLCoder", package: "WebImage"),
    .product(name: "ImageTransformers", package: "WebImage"),
]

func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency] = ["FuzzSupport"]) -> Target {
    .executableTarget(name: "fuzz-\(name)", dependencies: dependencies, path: "Targets/\(name)")
}

/// A target on one SDK product only (the parsers of plugins that pull in NIO, BoringSSL or AsyncHTTPClient).
func fuzzTarget(_ name: String, product: String) -> Target {
    fuzzTarget(name, [.product(name: product, package: "WebImage")])
}

let package = Package(
    name: "WebImageFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "WebImage", path: "..")
    ],
    targets: [
        .target(name: "FuzzSupport", dependencies: sdk, path: "Sources/FuzzSupport"),
        fuzzTarget("png-decode"),
        fuzzTarget("jpeg-decode"),
        fuzzTarget("webp-decode"),
        fuzzTarget("gif-decode"),
        fuzzTarget("progressive"),
        fuzzTarget("roundtrip"),
        fuzzTarget("avif-decode"),
        fuzzTarget("heif-decode"),
        fuzzTarget("apng-decode"),
        fuzzTarget("jxl-decode"),
        fuzzTarget("cache-control", product: "ImageCore"),
        fuzzTarget("http-headers", product: "HTTPLoader"),
        fuzzTarget("disk-entry", product: "DiskCache"),
        fuzzTarget("resp-decode", product: "RedisCache"),
        // ImageService's request parsing (ImageServiceQuery: no NIO, no crypto).
        fuzzTarget("thumbnail-query", product: "ImageServiceQuery"),
    ],
    swiftLanguageModes: [.v6]
)
