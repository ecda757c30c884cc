// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ThumbnailServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "thumbnail-server", targets: ["ThumbnailServer"])
    ],
    dependencies: [
        .package(name: "WebImage", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // The server as a library, so the tests can build and run it.
        .target(
            name: "ThumbnailServerApp",
            dependencies: [
                .product(name: "WebImage", package: "WebImage"),
                .product(name: "RedisCache", package: "WebImage"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .executableTarget(name: "ThumbnailServer", dependencies: ["ThumbnailServerApp"]),
        .testTarget(
            name: "ThumbnailServerTests",
            dependencies: [
                "ThumbnailServerApp",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
