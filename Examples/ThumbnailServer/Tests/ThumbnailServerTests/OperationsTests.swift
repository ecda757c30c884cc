import Foundation
import ImageService
import Testing
import WebImage

@testable import ThumbnailServerApp

/// Fits, gravity, device-pixel ratio, quality, formats, animation, orientation and presets, over live HTTP.
@Suite struct OperationsTests {
    /// A 400x200 grey image with a red 40x40 square in its top-left corner, and one with a busy patch on the right.
    static func origin() throws -> TestOrigin {
        let marked = TestImages.marked(width: 400, height: 200, square: (0, 0, 40), colour: (230, 20, 20))
        var busy = [UInt8](repeating: 120, count: 400 * 200 * 3)
        for y in 40..<160 {
            for x in 300..<390 {
                let i = (y * 400 + x) * 3
                let on = (x / 6 + y / 6) % 2 == 0
                (busy[i], busy[i + 1], busy[i + 2]) = on ? (250, 200, 30) : (20, 40, 200)
            }
        }
        let busyImage = Image(pixels: PixelBuffer(width: 400, height: 200, layout: .rgb8, bytes: busy))
        let spinner = try GIFCoder.shared.encode(
            SampleImages.spinner(width: 120, height: 80, frames: 4), as: .gif, options: ImageEncodeOptions())
        return TestOrigin([
            "/marked.png": .init(data: try TestImages.png(marked), contentType: "image/png"),
            "/busy.png": .init(data: try TestImages.png(busyImage), contentType: "image/png"),
            "/photo.jpg": .init(data: try TestImages.jpeg()),
            "/badge.png": .init(data: try TestImages.png(SampleImages.badge(size: 320)), contentType: "image/png"),
            "/spinner.gif": .init(data: spinner, contentType: "image/gif"),
            "/rotated.jpg": .init(
                data: TestImages.withEXIFOrientation(try TestImages.jpeg(width: 300, height: 100), 6)),
        ])
    }

    @Test func fitsGiveTheirSizes() async throws {
        let origin = try Self.origin()
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                for (query, width, height) in [
                    ("w=100&h=100", 100, 50), ("w=100&h=100&fit=cover", 100, 100), ("w=100&h=100&fit=fill", 100, 100),
                    ("w=100&h=100&fit=crop", 100, 100), ("w=800&h=800", 400, 200), ("w=800&h=800&enlarge=1", 800, 400),
                    ("w=800&h=100&fit=cover", 400, 50), ("w=50&dpr=2", 100, 50),
                    ("w=60&h=60&fit=cover&dpr=1.5", 90, 90),
                ] {
                    let reply = try await Live.get(base + Live.thumbnailPath(source: originBase + "/marked.png", query))
                    #expect(reply.status == 200, "\(query): \(reply.text)")
                    let image = try reply.image()
                    #expect(image.width == width && image.height == height, "\(query): \(image.width)x\(image.height)")
                }
            }
        }
    }

    /// Where the red corner square lands tells where the cut was made.
    @Test func gravityPlacesTheCut() async throws {
        let origin = try Self.origin()
        let red = (230, 20, 20)
        let grey = (128, 128, 128)
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                func cut(_ query: String) async throws -> Image {
                    let reply = try await Live.get(
                        base + Live.thumbnailPath(source: originBase + "/marked.png", query + "&format=png"))
                    #expect(reply.status == 200, "\(query)")
                    return try reply.image()
                }
                // cover 100x100 of 400x200: the window is 200x200 of the source, scaled by 1/2.
                let west = try await cut("w=100&h=100&fit=cover&gravity=west")
                #expect(TestImages.close(TestImages.rgb(west, 5, 5), red))
                let east = try await cut("w=100&h=100&fit=cover&gravity=east")
                #expect(TestImages.close(TestImages.rgb(east, 5, 5), grey))
                let centre = try await cut("w=100&h=100&fit=cover")
                #expect(TestImages.close(TestImages.rgb(centre, 5, 5), grey))
                // crop takes a 50x50 window at the north-west corner without scaling: 40 px of red.
                let corner = try await cut("w=50&h=50&fit=crop&gravity=nw")
                #expect(TestImages.close(TestImages.rgb(corner, 35, 35), red))
                #expect(TestImages.close(TestImages.rgb(corner, 45, 45), grey))
                // A 30x30 window centred on the square's centre (20, 20) is all red; centred on the image, all grey.
                let focus = try await cut("w=30&h=30&fit=crop&gravity=fp:0.05:0.1")
                #expect(
                    TestImages.close(TestImages.rgb(focus, 0, 0), red)
                        && TestImages.close(TestImages.rgb(focus, 29, 29), red))
                let middle = try await cut("w=30&h=30&fit=crop")
                #expect(TestImages.close(TestImages.rgb(middle, 0, 0), grey))
            }
        }
    }

    /// The smart crop finds the busy patch on the right where `center` would cut it off.
    @Test func smartCropFindsTheBusyPart() async throws {
        let origin = try Self.origin()
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                func busyShare(_ gravity: String) async throws -> Double {
                    let reply = try await Live.get(
                        base
                            + Live.thumbnailPath(
                                source: originBase + "/busy.png", "w=100&h=100&fit=cover&format=png&gravity=\(gravity)")
                    )
                    let image = try reply.image()
                    var busy = 0
                    for y in 0..<image.height {
                        for x in 0..<image.width
                        where !TestImages.close(TestImages.rgb(image, x, y), (120, 120, 120), within: 12) {
                            busy += 1
                        }
                    }
                    return Double(busy) / Double(image.width * image.height)
                }
                let smart = try await busyShare("smart")
                let centre = try await busyShare("center")
                // The patch is 45x60 of the 100x100 window at best (27 %).
                #expect(smart > 0.2, "smart crop kept \(smart) of the window busy")
                #expect(centre < 0.05, "centre crop kept \(centre)")
            }
        }
    }

    /// Quality per format, the `format` parameter, and `Accept` with `Vary` only when the format was negotiated.
    @Test func formatsQualityAndNegotiation() async throws {
        let origin = try Self.origin()
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                let photo = { (query: String) in base + Live.thumbnailPath(source: originBase + "/photo.jpg", query) }
                let low = try await Live.get(photo("w=300&q=10&format=jpeg"))
                let high = try await Live.get(photo("w=300&q=95&format=jpeg"))
                #expect(
                    low.header("Content-Type") == "image/jpeg" && Double(high.body.count) > Double(low.body.count) * 1.5
                )
                #expect(low.header("Vary") == nil)
                let browser = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
                let avif = try await Live.get(photo("w=64"), headers: [("Accept", browser)])
                #expect(avif.header("Content-Type") == "image/avif" && avif.header("Vary") == "Accept")
                #expect(try avif.image().format == .avif)
                let webp = try await Live.get(photo("w=64"), headers: [("Accept", "image/webp,image/*")])
                #expect(webp.header("Content-Type") == "image/webp" && webp.header("Vary") == "Accept")
                let plain = try await Live.get(photo("w=64"))
                #expect(plain.header("Content-Type") == "image/jpeg")
                #expect(Set([avif, webp, plain].compactMap { $0.header("ETag") }).count == 3)
                // A source with alpha and no Accept: PNG keeps the alpha; `source` keeps the source's format.
                let badge = try await Live.get(base + Live.thumbnailPath(source: originBase + "/badge.png", "w=64"))
                #expect(try badge.header("Content-Type") == "image/png" && badge.image().pixels.layout.hasAlpha)
                let gif = try await Live.get(
                    base + Live.thumbnailPath(source: originBase + "/spinner.gif", "w=64&format=source"))
                #expect(gif.header("Content-Type") == "image/gif")
            }
        }
    }

    /// An animated source: a still first frame by default, every frame resized with `anim=1`.
    @Test func animation() async throws {
        let origin = try Self.origin()
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                let spinner = { (query: String) in base + Live.thumbnailPath(source: originBase + "/spinner.gif", query)
                }
                let still = try await Live.get(spinner("w=60&format=gif"))
                #expect(try still.image().frameCount == 1)
                for format in ["gif", "webp"] {
                    let animated = try await Live.get(spinner("w=60&anim=1&format=\(format)"))
                    #expect(animated.status == 200, "\(format): \(animated.text)")
                    let image = try animated.image()
                    #expect(image.frameCount == 4 && image.width == 60 && image.height == 40, "\(format): \(image)")
                }
            }
            try await Live.withServer({ $0.allowAnimation = false }) { _, base in
                let refused = try await Live.get(
                    base + Live.thumbnailPath(source: originBase + "/spinner.gif", "w=60&anim=1"))
                #expect(refused.status == 400)
            }
        }
    }

    /// EXIF orientation is applied (a 300x100 landscape stored with orientation 6 is shown as 100x300), and the
    /// thumbnail carries no EXIF.
    @Test func orientationIsAppliedAndMetadataStripped() async throws {
        let origin = try Self.origin()
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                let reply = try await Live.get(
                    base + Live.thumbnailPath(source: originBase + "/rotated.jpg", "w=90&h=90&format=jpeg"))
                let image = try reply.image()
                #expect(image.width == 30 && image.height == 90, "\(image.width)x\(image.height)")
                #expect(image.metadata.exif == nil)
                #expect(reply.body.range(of: Data("Exif".utf8)) == nil)
            }
        }
    }

    /// A source described by a Display P3 profile comes out as sRGB pixels with no profile: the colours change
    /// (the conversion ran) and nothing but the pixels is carried.
    @Test func colourIsConvertedToSRGB() async throws {
        let profile = try Data(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../../../Tests/ColorManagementTests/Fixtures/display-p3.icc"))
        let width = 64
        let bytes = [[UInt8]](repeating: [40, 170, 90], count: width * width).flatMap { $0 }
        let image = Image(
            pixels: PixelBuffer(width: width, height: width, layout: .rgb8, bytes: bytes), format: .png,
            metadata: ImageMetadata(iccProfile: [UInt8](profile)))
        let source = try PNGCoder.shared.encode(image, as: .png, options: ImageEncodeOptions())
        #expect(try PNGCoder.shared.decode(source, options: ImageDecodeOptions()).metadata.iccProfile != nil)
        let origin = TestOrigin(["/p3.png": .init(data: source, contentType: "image/png")])
        try await Live.withOrigin(origin) { originBase, _ in
            try await Live.withServer { _, base in
                let reply = try await Live.get(
                    base + Live.thumbnailPath(source: originBase + "/p3.png", "w=32&format=png"))
                let thumbnail = try reply.image()
                #expect(thumbnail.metadata.iccProfile == nil)
                let (r, g, b) = TestImages.rgb(thumbnail, 16, 16)
                // P3 (40, 170, 90) is a more saturated green than sRGB (40, 170, 90): in sRGB, red drops and
                // green rises.
                #expect(r < 30 && g > 170, "sRGB \(r), \(g), \(b)")
            }
        }
    }

    @Test func presetsAndPresetsOnly() async throws {
        let origin = try Self.origin()
        try await Live.withOrigin(origin) { originBase, _ in
            let source = "url=\(QueryString.encode(originBase + "/photo.jpg"))"
            try await Live.withServer({ $0.presets = ["small": "w=40&h=40&fit=cover", "webp": "format=webp"] }) {
                _, base in
                let reply = try await Live.get(base + "/thumbnail?\(source)&preset=small,webp")
                #expect(reply.status == 200 && reply.header("Content-Type") == "image/webp")
                #expect(try reply.image().width == 40)
                try await Live.expectStatus(base + "/thumbnail?\(source)&preset=large", 400)
            }
            try await Live.withServer({
                $0.presets = ["small": "w=40&h=40"]
                $0.presetsOnly = true
            }) { _, base in
                try await Live.expectStatus(base + "/thumbnail?\(source)&preset=small", 200)
                try await Live.expectStatus(base + "/thumbnail?\(source)&w=40", 400)
            }
            await #expect(throws: ConfigurationError.self) {
                var configuration = Live.configuration(FileManager.default.temporaryDirectory)
                configuration.presets = ["broken": "w=zero"]
                _ = try await ThumbnailServer(configuration)
            }
        }
    }
}
