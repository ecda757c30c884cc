// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "StripQueryKeys",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "WebImage", path: "../.."),
        // Only for the example's own local image server.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "StripQueryKeys",
            dependencies: [
                .product(name: "ImageCore", package: "WebImage"),
                .product(name: "PNGCoder", package: "WebImage"),
                .product(name: "MemoryCache", package: "WebImage"),
                .product(name: "HTTPLoader", package: "WebImage"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
