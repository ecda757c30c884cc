// swift-tools-version:6.0
import PackageDescription

// A Vapor app that mounts the SDK's ImageService under /img beside its own routes. The SDK itself never resolves
// Vapor: only this example's package does.
let package = Package(
    name: "VaporThumbnails",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "vapor-thumbnails", targets: ["VaporThumbnails"])
    ],
    dependencies: [
        .package(name: "WebImage", path: "../.."),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "VaporThumbnailsApp",
            dependencies: [
                .product(name: "ImageService", package: "WebImage"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]),
        .executableTarget(name: "VaporThumbnails", dependencies: ["VaporThumbnailsApp"]),
        .testTarget(
            name: "VaporThumbnailsTests",
            dependencies: [
                "VaporThumbnailsApp",
                .product(name: "ImageCore", package: "WebImage"),
                .product(name: "ImageService", package: "WebImage"),
                .product(name: "PNGCoder", package: "WebImage"),
                .product(name: "VaporTesting", package: "vapor"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
