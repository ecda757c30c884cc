// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ThumbnailServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "thumbnail-server", targets: ["ThumbnailServer"]),
        // The request parsers alone (no Hummingbird), for the fuzz target in ../../Fuzz.
        .library(name: "ThumbnailQuery", targets: ["ThumbnailQuery"]),
    ],
    dependencies: [
        .package(name: "WebImage", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // What the server reads from a request: the query, Accept, If-None-Match and the origin allowlist.
        .target(
            name: "ThumbnailQuery",
            dependencies: [
                .product(name: "ImageCore", package: "WebImage"),
                .product(name: "ImageTransformers", package: "WebImage"),
            ]),
        // The server as a library, so the tests can build and run it.
        .target(
            name: "ThumbnailServerApp",
            dependencies: [
                "ThumbnailQuery",
                .product(name: "WebImage", package: "WebImage"),
                .product(name: "RedisCache", package: "WebImage"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .executableTarget(name: "ThumbnailServer", dependencies: ["ThumbnailServerApp"]),
        .testTarget(
            name: "ThumbnailServerTests",
            dependencies: [
                "ThumbnailServerApp", "ThumbnailQuery",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
