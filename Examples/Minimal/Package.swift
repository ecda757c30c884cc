// swift-tools-version:6.0
import PackageDescription

// Picks only what it needs: the core, the PNG coder and the memory cache. Building this package compiles no
// HTTP client and links neither libjpeg nor libwebp (ci.sh checks both).
let package = Package(
    name: "Minimal",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "WebImage", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "Minimal",
            dependencies: [
                .product(name: "ImageCore", package: "WebImage"),
                .product(name: "PNGCoder", package: "WebImage"),
                .product(name: "MemoryCache", package: "WebImage"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
