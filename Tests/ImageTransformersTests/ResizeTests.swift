import ImageCore
import Testing

@testable import ImageTransformers

@Suite("Resize")
struct ResizeTests {
    static func checkerboard(_ size: Int, cell: Int = 1) -> PixelBuffer {
        Fixtures.buffer(width: size, height: size) { x, y in
            let v: UInt8 = ((x / cell) + (y / cell)) % 2 == 0 ? 0 : 255
            return [v, v, v, 255]
        }
    }

    func resize(
        _ buffer: PixelBuffer, _ w: Int, _ h: Int, _ mode: ResizeTransformer.Mode = .fill,
        _ filter: ResizeFilter = .lanczos3
    ) throws -> PixelBuffer {
        try ResizeTransformer(width: w, height: h, mode: mode, filter: filter).transform(
            Image(pixels: buffer), forKey: "k"
        )
        .pixels
    }

    @Test("a 1-px checkerboard halved by area average is uniform 127/128")
    func checkerboardBox() throws {
        let out = try resize(Self.checkerboard(64), 32, 32, .fill, .box)
        for y in 0..<32 {
            for x in 0..<32 {
                let p = Fixtures.px(out, x, y)
                #expect(p[0] == 127 || p[0] == 128, "(\(x),\(y)) = \(p)")
                #expect(p[0] == p[1] && p[1] == p[2] && p[3] == 255)
            }
        }
    }

    @Test(
        "checkerboards reduced with Lanczos (direct 2x, and 8x through the area-average path) are uniform gray",
        arguments: [(64, 32), (64, 8), (96, 10)])
    func checkerboardLanczos(size: Int, target: Int) throws {
        let out = try resize(Self.checkerboard(size), target, target)
        // Away from the edges, where renormalising the clipped kernel breaks the pattern's symmetry.
        var values = Set<UInt8>()
        for y in 3..<(target - 3) { for x in 3..<(target - 3) { values.insert(Fixtures.px(out, x, y)[0]) } }
        #expect(values.allSatisfy { abs(Int($0) - 128) <= 2 }, "values \(values.sorted())")
    }

    @Test(
        "a horizontal gradient stays monotonic with endpoints where the geometry puts them",
        arguments: [(256, 100), (256, 37), (256, 600), (64, 64 * 5)])
    func gradient(width: Int, target: Int) throws {
        for filter in ResizeFilter.allCases {
            let source = Fixtures.buffer(width: width, height: 4, layout: .gray8) { x, _ in
                [UInt8(x * 255 / (width - 1))]
            }
            let out = try resize(source, target, 3, .fill, filter)
            #expect(out.layout == .gray8 && out.width == target && out.height == 3)
            let row = (0..<target).map { Int(Fixtures.px(out, $0, 1)[0]) }
            for x in 1..<target { #expect(row[x] >= row[x - 1], "\(filter) not monotonic at \(x): \(row)") }
            // Ideal value at the output pixel centre mapped into the source; 3 levels of slack for edge
            // renormalisation (and box/nearest quantisation).
            let scale = Double(width) / Double(target)
            func ideal(_ i: Int) -> Double {
                let sourceX = min(max((Double(i) + 0.5) * scale - 0.5, 0), Double(width - 1))
                return sourceX * 255 / Double(width - 1)
            }
            let slack = filter == .box && target > width ? 255.0 / Double(width - 1) + 1 : 3
            #expect(abs(Double(row[0]) - ideal(0)) <= slack, "\(filter) first \(row[0]) vs \(ideal(0))")
            #expect(abs(Double(row[target - 1]) - ideal(target - 1)) <= slack, "\(filter) last \(row[target - 1])")
        }
    }

    @Test("enlarging a constant image keeps it constant", arguments: ResizeFilter.allCases)
    func constantUpscale(filter: ResizeFilter) throws {
        let source = Fixtures.buffer(width: 5, height: 7) { _, _ in [13, 200, 77, 100] }
        let out = try resize(source, 23, 31, .fill, filter)
        for y in 0..<31 { for x in 0..<23 { #expect(Fixtures.px(out, x, y) == [13, 200, 77, 100]) } }
    }

    @Test(
        "Lanczos-3 and Catmull-Rom match a direct double-precision reference within 1 level",
        arguments: [
            (40, 30, 16, 12, ResizeFilter.lanczos3), (40, 30, 97, 61, .lanczos3), (40, 30, 23, 17, .catmullRom),
            (33, 21, 70, 9, .catmullRom), (40, 30, 13, 11, .box),
        ])
    func matchesReference(w: Int, h: Int, outW: Int, outH: Int, filter: ResizeFilter) throws {
        let source = Fixtures.randomOpaque(width: w, height: h, seed: UInt64(w * 1000 + outW))
        let out = try resize(source, outW, outH, .fill, filter)
        let reference = ResizeReference.resize(
            source, to: PixelSize(width: outW, height: outH), mode: .fill, filter: filter)
        #expect(ResizeReference.maxDifference(out, reference) <= 1)
    }

    @Test("large reductions follow the documented area-average rule and stay close to pure Lanczos")
    func areaAverageRule() throws {
        #expect(ResizeTransformer.boxFactor(scale: 3.99, filter: .lanczos3) == 1)
        #expect(ResizeTransformer.boxFactor(scale: 4, filter: .lanczos3) == 2)
        #expect(ResizeTransformer.boxFactor(scale: 15.6, filter: .catmullRom) == 7)
        #expect(ResizeTransformer.boxFactor(scale: 15.6, filter: .box) == 1)
        let source = Fixtures.randomOpaque(width: 122, height: 83, seed: 99)
        let out = try resize(source, 10, 9)  // s = 12.2 (k = 6) and 9.2 (k = 4), partial boxes at both edges
        let size = PixelSize(width: 10, height: 9)
        let rule = ResizeReference.resize(source, to: size, mode: .fill, filter: .lanczos3)
        #expect(ResizeReference.maxDifference(out, rule) <= 1)
        // On white noise (the worst case for any pre-filter) the area-average path stays within a few levels of
        // filtering the whole way.
        let pure = ResizeReference.resize(source, to: size, mode: .fill, filter: .lanczos3, useAreaRule: false)
        #expect(ResizeReference.meanDifference(out, pure) <= 2)
        #expect(ResizeReference.maxDifference(out, pure) <= 10)
    }

    @Test("aspect-fill crops the centre, matching the reference")
    func aspectFillReference() throws {
        let source = Fixtures.randomOpaque(width: 60, height: 30, seed: 5)
        let out = try resize(source, 20, 20, .aspectFill)
        #expect(out.width == 20 && out.height == 20)
        let reference = ResizeReference.resize(
            source, to: PixelSize(width: 20, height: 20), mode: .aspectFill, filter: .lanczos3)
        #expect(ResizeReference.maxDifference(out, reference) <= 1)
        // Left third red, middle green, right third blue: the fill keeps only green.
        let bands = Fixtures.buffer(width: 90, height: 30, layout: .rgb8) { x, _ in
            x < 30 ? [255, 0, 0] : (x < 60 ? [0, 255, 0] : [0, 0, 255])
        }
        let centre = try resize(bands, 10, 10, .aspectFill)
        #expect(centre.layout == .rgb8)
        // The filter reaches 9 source pixels (3 at scale 1/3) beyond each centre: columns 3..<7 see only green.
        for y in 0..<10 { for x in 3..<7 { #expect(Fixtures.px(centre, x, y) == [0, 255, 0]) } }
    }

    @Test("output sizes of the three modes")
    func sizes() throws {
        let fit = ResizeTransformer(width: 256, height: 256)
        #expect(fit.outputSize(for: PixelSize(width: 4000, height: 3000)) == PixelSize(width: 256, height: 192))
        #expect(fit.outputSize(for: PixelSize(width: 300, height: 400)) == PixelSize(width: 192, height: 256))
        #expect(fit.outputSize(for: PixelSize(width: 10, height: 5)) == PixelSize(width: 256, height: 128))
        let hd = ResizeTransformer(width: 1920, height: 1080)
        #expect(hd.outputSize(for: PixelSize(width: 4000, height: 3000)) == PixelSize(width: 1440, height: 1080))
        let fill = ResizeTransformer(width: 256, height: 100, mode: .aspectFill)
        #expect(fill.outputSize(for: PixelSize(width: 4000, height: 3000)) == PixelSize(width: 256, height: 100))
        let stretch = ResizeTransformer(width: 7, height: 300, mode: .fill)
        let out = try stretch.transform(Image(pixels: Self.checkerboard(20)), forKey: "k")
        #expect(out.width == 7 && out.height == 300)
    }

    @Test("an opaque white square on transparent black has no dark halo", arguments: ResizeFilter.allCases)
    func noDarkHalo(filter: ResizeFilter) throws {
        let source = Fixtures.buffer(width: 40, height: 40) { x, y in
            (10..<30).contains(x) && (10..<30).contains(y) ? [255, 255, 255, 255] : [0, 0, 0, 0]
        }
        for (w, h) in [(13, 13), (7, 9), (100, 100), (40, 23)] {
            let out = try resize(source, w, h, .fill, filter)
            var partial = 0
            for y in 0..<h {
                for x in 0..<w {
                    let p = Fixtures.px(out, x, y)
                    if p[3] > 0 {
                        #expect(p[0] >= 254 && p[1] >= 254 && p[2] >= 254, "\(filter) \(w)x\(h) (\(x),\(y)) = \(p)")
                    }
                    if p[3] > 0 && p[3] < 255 { partial += 1 }
                }
            }
            if filter != .box { #expect(partial > 0, "edges should be soft") }
        }
    }

    @Test("layouts and alpha modes are kept")
    func layoutsKept() throws {
        let gray = Fixtures.buffer(width: 8, height: 8, layout: .gray8, padding: 3) { x, _ in [UInt8(x * 30)] }
        #expect(try resize(gray, 4, 4).layout == .gray8)
        let grayAlpha = Fixtures.buffer(width: 8, height: 8, layout: .grayAlpha8) { _, _ in [80, 40] }
        let ga = try resize(grayAlpha, 3, 5)
        #expect(ga.layout == .grayAlpha8 && Fixtures.px(ga, 1, 1) == [80, 40])
        let premultiplied = Fixtures.buffer(width: 8, height: 8, layout: .rgba8, alphaMode: .premultiplied) { _, _ in
            [50, 40, 30, 100]
        }
        let pm = try resize(premultiplied, 5, 3)
        #expect(pm.alphaMode == .premultiplied && Fixtures.px(pm, 2, 1) == [50, 40, 30, 100])
        let rgb = Fixtures.buffer(width: 8, height: 8, layout: .rgb8) { _, _ in [1, 2, 3] }
        let rgbOut = try resize(rgb, 16, 2)
        #expect(rgbOut.layout == .rgb8 && Fixtures.px(rgbOut, 15, 1) == [1, 2, 3])
    }

    @Test("same size is the identity; bad sizes throw typed errors")
    func identityAndErrors() throws {
        let source = Fixtures.randomOpaque(width: 9, height: 9, seed: 1)
        let out = try ResizeTransformer(width: 9, height: 9, mode: .fill).transform(Image(pixels: source), forKey: "k")
        #expect(out.pixels.bytes == source.bytes)
        #expect(out.metadata.isTransformed)
        let image = Image(pixels: source)
        let empty = #expect(throws: ImageError.self) {
            try ResizeTransformer(width: 0, height: 10).transform(image, forKey: "k")
        }
        #expect(empty?.code == .transformFailed)
        let negative = #expect(throws: ImageError.self) {
            try ResizeTransformer(width: -3, height: 10, mode: .fill).transform(image, forKey: "k")
        }
        #expect(negative?.code == .transformFailed)
        let huge = #expect(throws: ImageError.self) {
            try ResizeTransformer(width: 1 << 20, height: 1 << 20, mode: .fill).transform(image, forKey: "k")
        }
        #expect(huge?.code == .imageTooLarge)
        let zeroSource = Image(pixels: PixelBuffer(width: 0, height: 0, layout: .rgba8))
        #expect(throws: ImageError.self) {
            try ResizeTransformer(width: 4, height: 4).transform(zeroSource, forKey: "k")
        }
    }

    @Test("a large image goes through parallel stripes and agrees with a single-stripe tile")
    func stripesAgree() throws {
        // 1200×900 → 300×225 runs in several stripes; its top-left corner only depends on the top-left source.
        let source = Fixtures.buffer(width: 1200, height: 900) { x, y in
            [UInt8((x * 3 + y) & 255), UInt8((x ^ y) & 255), UInt8((y * 5) & 255), UInt8(128 + (x + y) % 128)]
        }
        let whole = try resize(source, 300, 225)
        #expect(whole.width == 300 && whole.height == 225)
        // Rows around the middle (a stripe boundary) against the same resize of a 40×40 tile of the source:
        // away from the tile's own edges (the filter reaches 3 output pixels) both must agree.
        let tile = Fixtures.buffer(width: 40, height: 40) { x, y in Fixtures.px(source, x, y + 400) }
        let tileOut = try resize(tile, 10, 10)
        for y in 3..<7 {
            for x in 0..<7 {
                let a = Fixtures.px(whole, x, y + 100)
                let b = Fixtures.px(tileOut, x, y)
                for c in 0..<4 { #expect(abs(Int(a[c]) - Int(b[c])) <= 1, "(\(x),\(y)) \(a) vs \(b)") }
            }
        }
    }
}
