/// The canvas an animation decoder composites its frames onto: RGBA, straight alpha, transparent black at the start,
/// in pooled storage (``PixelPool``).
///
/// A frame at the canvas's size is the canvas itself: ``frame(target:)`` shares the storage, and the next change to
/// the canvas copies it first (copy-on-write), so a frame handed out never changes and a still image costs no copy.
/// A smaller frame is area-averaged straight from the canvas, so a thumbnail of an animation never copies the
/// full-size canvas first. Rectangles are in canvas pixels and must lie inside the canvas (callers clip first); an
/// empty one changes nothing.
/// Not thread-safe: one compositor owns it.
package struct CompositingCanvas {
    /// The composited pixels.
    package private(set) var pixels: PixelBuffer

    /// A transparent canvas.
    /// - Throws: ``ImageError`` `imageTooLarge` when the system refuses the memory.
    package init(width: Int, height: Int) throws(ImageError) {
        pixels = try PixelBuffer(zeroedWidth: width, height: height, layout: .rgba8, alphaMode: .straight)
    }

    package var width: Int { pixels.width }
    package var height: Int { pixels.height }

    /// Runs `body` with the canvas's bytes (rows packed, 4 bytes a pixel), copying them first when a frame shares
    /// them.
    package mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableBufferPointer<UInt8>) -> R) -> R {
        pixels.withUnsafeMutableBytes { body($0) }
    }

    /// Clears the rectangle to transparent black.
    package mutating func clear(x: Int, y: Int, width: Int, height: Int) {
        let canvasWidth = self.width
        withUnsafeMutableBytes { bytes in
            for row in y..<y + height {
                let start = (row * canvasWidth + x) * 4
                UnsafeMutableBufferPointer(rebasing: bytes[start..<start + width * 4]).update(repeating: 0)
            }
        }
    }

    /// The rectangle's pixels, rows packed: what ``paste(_:x:y:width:height:)`` puts back.
    package func copy(x: Int, y: Int, width: Int, height: Int) -> [UInt8] {
        let canvasWidth = self.width, rowBytes = width * 4
        guard rowBytes > 0, height > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: rowBytes * height) { out, count in
            pixels.withUnsafeBytes { bytes in
                for row in 0..<height {
                    let start = ((y + row) * canvasWidth + x) * 4
                    UnsafeMutableRawPointer(out.baseAddress! + row * rowBytes).copyMemory(
                        from: bytes.baseAddress! + start, byteCount: rowBytes)
                }
            }
            count = rowBytes * height
        }
    }

    /// Puts back pixels that ``copy(x:y:width:height:)`` took from the same rectangle.
    package mutating func paste(_ saved: [UInt8], x: Int, y: Int, width: Int, height: Int) {
        let canvasWidth = self.width, rowBytes = width * 4
        precondition(saved.count == max(0, rowBytes * height), "pasted pixels of another rectangle")
        guard rowBytes > 0, height > 0 else { return }
        withUnsafeMutableBytes { bytes in
            saved.withUnsafeBufferPointer { saved in
                for row in 0..<height {
                    let start = ((y + row) * canvasWidth + x) * 4
                    UnsafeMutableRawPointer(bytes.baseAddress! + start).copyMemory(
                        from: saved.baseAddress! + row * rowBytes, byteCount: rowBytes)
                }
            }
        }
    }

    /// The canvas as a frame of `target` size: the canvas itself (shared storage) at its own size, else
    /// area-averaged from it. Sides under 1 are taken as 1.
    package func frame(target: PixelSize) -> PixelBuffer {
        let width = max(1, target.width), height = max(1, target.height)
        guard width != self.width || height != self.height else { return pixels }
        return pixels.areaResampled(width: width, height: height)
    }
}
