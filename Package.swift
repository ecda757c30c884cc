// swift-tools-version:6.0
import PackageDescription

// Every runtime plugin lives in Plugins/<Name> with an explicit `path:` (SwiftPM's default home for *package*
// plugins is also Plugins/; none of these are package plugins). C libraries come from Debian/Ubuntu packages.

let package = Package(
    name: "WebImage",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ImageCore", targets: ["ImageCore"]),
        .library(name: "PNGCoder", targets: ["PNGCoder"]),
        .library(name: "JPEGCoder", targets: ["JPEGCoder"]),
        .library(name: "WebPCoder", targets: ["WebPCoder"]),
        .library(name: "GIFCoder", targets: ["GIFCoder"]),
        .library(name: "AVIFCoder", targets: ["AVIFCoder"]),
        .library(name: "HEIFCoder", targets: ["HEIFCoder"]),
        .library(name: "ColorManagement", targets: ["ColorManagement"]),
        .library(name: "JXLCoder", targets: ["JXLCoder"]),
        .library(name: "MemoryCache", targets: ["MemoryCache"]),
        .library(name: "DiskCache", targets: ["DiskCache"]),
        .library(name: "HTTPLoader", targets: ["HTTPLoader"]),
        .library(name: "ImageTransformers", targets: ["ImageTransformers"]),
        .library(name: "RedisCache", targets: ["RedisCache"]),
        .library(name: "WebImage", targets: ["WebImage"]),
        // The thumbnail service as a library (issue 33): request in, response out; no web framework. Adapters
        // (Hummingbird, Vapor) live in Examples/. ImageServiceQuery is its request parsing alone (no NIO, no
        // crypto), for the fuzz target.
        .library(name: "ImageService", targets: ["ImageService"]),
        .library(name: "ImageServiceQuery", targets: ["ImageServiceQuery"]),
        .executable(name: "webimage-demo", targets: ["WebImageDemo"]),
        .executable(name: "image-soak", targets: ["ImageSoak"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),  // `make docs` only
        // Property tests (issue 21): random inputs through Swift Testing, the seed of a failure printed.
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // ImageService only: the request/response vocabulary both Hummingbird and Vapor speak, and spans per stage.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // MARK: Core (Foundation and the standard library only)
        .target(name: "ImageCore", path: "Sources/ImageCore"),

        // MARK: C libraries (system packages)
        .systemLibrary(
            name: "CPNG", path: "Plugins/CPNG", pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"])]),
        .systemLibrary(
            name: "CJPEG", path: "Plugins/CJPEG", pkgConfig: "libturbojpeg",
            providers: [.apt(["libjpeg62-turbo-dev", "libturbojpeg0-dev", "libjpeg-turbo8-dev"])]),
        // libdeflate: PNGCoder's fast paths inflate and deflate with it (several times zlib's speed).
        .systemLibrary(
            name: "CDeflate", path: "Plugins/CDeflate", pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]),
        // zlib: the CRC-32 of the chunks the APNG decoder and encoder write (libpng links it anyway), and the fast
        // reader's streamed inflate of images too large to inflate at once.
        .target(
            name: "CPNGShim", dependencies: ["CPNG", "CDeflate"], path: "Plugins/CPNGShim",
            linkerSettings: [.linkedLibrary("z")]),
        // zlib: HTTPLoader removes a body's gzip or deflate coding with it (AsyncHTTPClient needs it already).
        .systemLibrary(
            name: "CZlib", path: "Plugins/CZlib",
            providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(
            name: "CWebP", path: "Plugins/CWebP", pkgConfig: "libwebp",
            providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(
            name: "CGIF", path: "Plugins/CGIF",
            providers: [.apt(["libgif-dev"])]),
        // No pkgConfig: libavif.pc only adds -DAVIF_DLL (a Windows import flag), which SwiftPM refuses with a warning.
        .systemLibrary(
            name: "CAVIF", path: "Plugins/CAVIF",
            providers: [.apt(["libavif-dev"])]),
        .systemLibrary(
            name: "CHEIF", path: "Plugins/CHEIF", pkgConfig: "libheif",
            providers: [.apt(["libheif-dev"])]),
        .systemLibrary(
            name: "CLCMS2", path: "Plugins/CLCMS2", pkgConfig: "lcms2",
            providers: [.apt(["liblcms2-dev"])]),

        // Extended attributes (fgetxattr & co., in libc but not in Swift's Glibc module), for DiskCache.
        .systemLibrary(name: "CXattr", path: "Plugins/CXattr"),
        // No pkgConfig: libjxl.pc pulls -DHWY_SHARED_DEFINE from libhwy, which SwiftPM refuses with a warning.
        .systemLibrary(
            name: "CJXL", path: "Plugins/CJXL",
            providers: [.apt(["libjxl-dev"])]),

        // MARK: Coder plugins
        .target(name: "PNGCoder", dependencies: ["ImageCore", "CPNG", "CPNGShim"], path: "Plugins/PNGCoder"),
        .target(name: "JPEGCoder", dependencies: ["ImageCore", "CJPEG"], path: "Plugins/JPEGCoder"),
        .target(name: "WebPCoder", dependencies: ["ImageCore", "CWebP"], path: "Plugins/WebPCoder"),
        .target(name: "GIFCoder", dependencies: ["ImageCore", "CGIF"], path: "Plugins/GIFCoder"),
        .target(name: "AVIFCoder", dependencies: ["ImageCore", "CAVIF"], path: "Plugins/AVIFCoder"),
        .target(name: "HEIFCoder", dependencies: ["ImageCore", "CHEIF"], path: "Plugins/HEIFCoder"),

        // MARK: Colour management (ICC to sRGB on lcms2; ImageCore holds only the ColorConverter hook)
        .target(name: "ColorManagement", dependencies: ["ImageCore", "CLCMS2"], path: "Plugins/ColorManagement"),

        .target(name: "JXLCoder", dependencies: ["ImageCore", "CJXL"], path: "Plugins/JXLCoder"),

        // MARK: Cache plugins
        .target(name: "MemoryCache", dependencies: ["ImageCore"], path: "Plugins/MemoryCache"),
        .target(
            name: "DiskCache",
            dependencies: [
                "ImageCore", "CXattr",
                .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Plugins/DiskCache"),

        // A shared cache level for a fleet: a small RESP client on SwiftNIO (no coder, no AsyncHTTPClient).
        .target(
            name: "RedisCache",
            dependencies: [
                "ImageCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Plugins/RedisCache"),

        // MARK: Loader plugin
        .target(
            name: "HTTPLoader",
            dependencies: [
                "ImageCore",
                "CZlib",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Plugins/HTTPLoader"),

        // MARK: Transformers
        .target(name: "ImageTransformers", dependencies: ["ImageCore"], path: "Plugins/ImageTransformers"),

        // MARK: The thumbnail service (issue 33)
        .target(name: "ImageServiceQuery", dependencies: ["ImageCore"], path: "Plugins/ImageService/Query"),
        .target(
            name: "ImageService",
            dependencies: [
                "ImageServiceQuery", "ImageCore", "PNGCoder", "JPEGCoder", "WebPCoder", "GIFCoder", "AVIFCoder",
                "HEIFCoder", "JXLCoder", "ColorManagement", "ImageTransformers", "DiskCache", "MemoryCache",
                "RedisCache", "HTTPLoader",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Plugins/ImageService/Service"),

        // MARK: Umbrella and demo
        .target(
            name: "WebImage",
            dependencies: [
                "ImageCore", "PNGCoder", "JPEGCoder", "WebPCoder", "GIFCoder", "MemoryCache", "DiskCache",
                "HTTPLoader", "ImageTransformers", "AVIFCoder", "HEIFCoder", "JXLCoder", "ColorManagement",
            ],
            path: "Sources/WebImage"),
        .executableTarget(
            name: "WebImageDemo",
            dependencies: [
                "WebImage",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/WebImageDemo"),
        // The soak (issue 13): mixed good and hostile traffic against a local server, resources sampled each second.
        .executableTarget(
            name: "ImageSoak",
            dependencies: [
                "WebImage",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/ImageSoak"),

        // MARK: Tests (one target per module; shared doubles in ImageTestSupport)
        .target(name: "ImageTestSupport", dependencies: ["ImageCore"], path: "Tests/ImageTestSupport"),
        // The scripted HTTP origin on SwiftNIO that HTTPLoader's and ImageService's suites share.
        .target(
            name: "HTTPTestSupport",
            dependencies: [
                "ImageCore", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/HTTPTestSupport"),
        .testTarget(
            name: "ImageCoreTests",
            dependencies: [
                "ImageCore", "ImageTestSupport", .product(name: "PropertyBased", package: "swift-property-based"),
            ]),
        .testTarget(
            name: "PNGCoderTests",
            dependencies: [
                "PNGCoder", "ImageTestSupport", .product(name: "PropertyBased", package: "swift-property-based"),
            ]),
        .testTarget(name: "JPEGCoderTests", dependencies: ["JPEGCoder", "ImageTestSupport"]),
        .testTarget(name: "WebPCoderTests", dependencies: ["WebPCoder", "ImageTestSupport"]),
        .testTarget(name: "GIFCoderTests", dependencies: ["GIFCoder", "ImageTestSupport"]),
        .testTarget(name: "AVIFCoderTests", dependencies: ["AVIFCoder", "CAVIF", "ImageTestSupport"]),
        .testTarget(name: "JXLCoderTests", dependencies: ["JXLCoder", "CJXL", "ImageTestSupport"]),
        .testTarget(name: "HEIFCoderTests", dependencies: ["HEIFCoder", "CHEIF", "ImageTestSupport"]),
        .testTarget(
            name: "ColorManagementTests",
            dependencies: [
                "ColorManagement", "CHEIF", "JPEGCoder", "PNGCoder", "WebPCoder", "AVIFCoder", "HEIFCoder",
                "ImageTestSupport",
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "CoderConformanceTests",
            dependencies: [
                "PNGCoder", "JPEGCoder", "WebPCoder", "GIFCoder", "AVIFCoder", "HEIFCoder", "JXLCoder",
                "ImageTestSupport",
            ]),
        .testTarget(name: "MemoryCacheTests", dependencies: ["MemoryCache", "ImageTestSupport"]),
        .testTarget(
            name: "DiskCacheTests",
            dependencies: [
                "DiskCache", "MemoryCache", "ImageTestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]),
        .testTarget(
            name: "HTTPLoaderTests",
            dependencies: [
                // DiskCache: ImageErrorCodeTests raises every ImageError code, cacheFailure from a disk store.
                "HTTPLoader", "ImageTestSupport", "HTTPTestSupport", "PNGCoder", "DiskCache", "CZlib",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .testTarget(
            name: "RedisCacheTests",
            dependencies: [
                "RedisCache", "MemoryCache", "DiskCache", "HTTPLoader", "ImageTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .testTarget(
            name: "ImageTransformersTests",
            dependencies: [
                "ImageTransformers", "ImageTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]),
        // The main-line model and the non-interference property (issue 32) run a second manager against a real
        // redis-server through RedisCache (fleet coalescing); the fixture picks a free port with NIO.
        .testTarget(
            name: "WebImageTests",
            dependencies: [
                "WebImage", "ImageTestSupport", "RedisCache",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]),
        .testTarget(
            name: "ImageServiceTests",
            dependencies: [
                "ImageService", "ImageServiceQuery", "ImageTestSupport", "HTTPTestSupport", "PNGCoder", "JPEGCoder",
                "JXLCoder", "ColorManagement",
                "ImageTransformers",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

// The AddressSanitizer step of scripts/test.sh runs the coder suites only. WEBIMAGE_CODERS_ONLY=1 leaves out every
// target those suites don't need (everything on NIO, BoringSSL, AsyncHTTPClient or swift-crypto), so that step
// compiles the code that talks to the C libraries and nothing else: a third of CI's time otherwise.
// WEBIMAGE_TARGETS="ImageCoreTests DiskCacheTests" does the same for any list of targets (a developer working on
// one module): the package keeps those targets and what they depend on, so `swift test` links only their suites.
var keptTargets: Set<String>? = nil
if Context.environment["WEBIMAGE_CODERS_ONLY"] == "1" {
    keptTargets = [
        "PNGCoderTests", "JPEGCoderTests", "WebPCoderTests", "GIFCoderTests", "AVIFCoderTests",
        "HEIFCoderTests", "JXLCoderTests", "ColorManagementTests", "CoderConformanceTests", "ImageTransformers",
    ]
}
if let list = Context.environment["WEBIMAGE_TARGETS"], !list.isEmpty {
    keptTargets = Set(list.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init))
}
if var kept = keptTargets {
    // The closure of the named targets over their in-package dependencies.
    let byName = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
    var pending = Array(kept)
    while let name = pending.popLast() {
        for dependency in byName[name]?.dependencies ?? [] {
            let next: String
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): next = name
            default: continue
            }
            if byName[next] != nil, kept.insert(next).inserted { pending.append(next) }
        }
    }
    package.targets.removeAll { !kept.contains($0.name) }
    // Products are named after their target, but for the two executables.
    let productTarget = ["webimage-demo": "WebImageDemo", "image-soak": "ImageSoak"]
    package.products.removeAll { !kept.contains(productTarget[$0.name] ?? $0.name) }
}
