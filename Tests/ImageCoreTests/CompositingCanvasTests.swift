import Testing

@testable import ImageCore

/// GIF and APNG composite onto a ``CompositingCanvas`` and hand out frames taken from it.
@Suite struct CompositingCanvasTests {
    /// A canvas filled with seeded noise, and the same pixels as a plain buffer.
    static func noisyCanvas(width: Int, height: Int, seed: UInt64) throws -> (CompositingCanvas, PixelBuffer) {
        var random = SplitMix(seed)
        var canvas = try CompositingCanvas(width: width, height: height)
        canvas.withUnsafeMutableBytes { bytes in
            for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: random.next()) }
        }
        let copy = try PixelBuffer(
            width: width, height: height, layout: .rgba8, alphaMode: .straight, validating: Array(canvas.pixels.bytes))
        return (canvas, copy)
    }

    @Test("a new canvas is transparent black, straight RGBA")
    func startsTransparent() throws {
        let canvas = try CompositingCanvas(width: 5, height: 3)
        #expect(canvas.pixels.layout == .rgba8 && canvas.pixels.alphaMode == .straight)
        #expect(canvas.pixels.bytes.allSatisfy { $0 == 0 })
    }

    @Test("a full-size frame is the canvas itself; other sizes are the canvas area-averaged")
    func framesShareOrResample() throws {
        let (canvas, full) = try Self.noisyCanvas(width: 37, height: 23, seed: 7)
        let same = canvas.frame(target: PixelSize(width: 37, height: 23))
        #expect(same.sharesStorage(with: canvas.pixels), "a still image's frame must not copy the canvas")
        #expect(same == full)
        for target in [PixelSize(width: 9, height: 5), PixelSize(width: 1, height: 40)] {
            let frame = canvas.frame(target: target)
            #expect(frame == full.areaResampled(width: target.width, height: target.height), "\(target)")
        }
        #expect(canvas.frame(target: PixelSize(width: 0, height: 0)).width == 1, "sides under 1 are taken as 1")
    }

    @Test("drawing after a frame was taken copies the canvas: the frame never changes")
    func aTakenFrameNeverChanges() throws {
        var (canvas, full) = try Self.noisyCanvas(width: 16, height: 12, seed: 3)
        let frame = canvas.frame(target: PixelSize(width: 16, height: 12))
        canvas.clear(x: 0, y: 0, width: 16, height: 12)
        canvas.withUnsafeMutableBytes { $0[0] = 9 }
        #expect(frame == full, "the frame kept the pixels it was taken with")
        #expect(!frame.sharesStorage(with: canvas.pixels))
        #expect(canvas.pixels.bytes.dropFirst().allSatisfy { $0 == 0 } && canvas.pixels.bytes.first == 9)
    }

    @Test("clear touches only its rectangle; paste puts back what copy took", arguments: [UInt64(1), 2, 3])
    func clearCopyPaste(seed: UInt64) throws {
        var (canvas, full) = try Self.noisyCanvas(width: 20, height: 15, seed: seed)
        var random = SplitMix(seed &+ 100)
        let x = Int(random.next() % 20), y = Int(random.next() % 15)
        let width = 1 + Int(random.next() % UInt64(20 - x)), height = 1 + Int(random.next() % UInt64(15 - y))
        let saved = canvas.copy(x: x, y: y, width: width, height: height)
        #expect(saved.count == width * height * 4)
        canvas.clear(x: x, y: y, width: width, height: height)
        for py in 0..<15 {
            for px in 0..<20 {
                let inside = px >= x && px < x + width && py >= y && py < y + height
                let expected = inside ? [0, 0, 0, 0] : Array(full.pixel(x: px, y: py))
                #expect(Array(canvas.pixels.pixel(x: px, y: py)) == expected, "seed \(seed) (\(px),\(py))")
            }
        }
        canvas.paste(saved, x: x, y: y, width: width, height: height)
        #expect(canvas.pixels == full, "seed \(seed): rectangle \(x),\(y) \(width)×\(height)")
        // Empty rectangles (a frame clipped away) change nothing.
        for (w, h) in [(0, 3), (3, 0), (0, 0)] {
            #expect(canvas.copy(x: x, y: y, width: w, height: h).isEmpty)
            canvas.clear(x: x, y: y, width: w, height: h)
            canvas.paste([], x: x, y: y, width: w, height: h)
        }
        #expect(canvas.pixels == full)
    }
}
