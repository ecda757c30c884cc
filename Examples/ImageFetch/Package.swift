// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ImageFetch",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "image-fetch", targets: ["ImageFetch"])
    ],
    dependencies: [
        .package(name: "WebImage", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "ImageFetch",
            dependencies: [
                // The umbrella: every coder, the two-level cache, the HTTP loader and the transformers.
                .product(name: "WebImage", package: "WebImage"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
