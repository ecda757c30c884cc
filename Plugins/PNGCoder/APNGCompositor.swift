import Foundation
import ImageCore

/// Decodes an APNG's frames in order and composites them onto the canvas (RGBA8, straight alpha, transparent
/// black at the start), as the APNG specification describes.
///
/// Each frame is decoded by libpng from its own still-PNG stream (``APNGFrameStream``), then drawn at its offset
/// with its blend op (`source` replaces the region, `over` composites with straight-alpha "over"); after it was
/// shown, its dispose op clears the region (`background`) or restores what was under it (`previous`; on the first
/// frame it acts as `background`, as the specification says). Playing frames in order costs one frame decode
/// each; an earlier frame restarts from frame 0. The decoded pixels of one pass are charged to
/// ``AnimationBudget/maxWorkPixelCount`` before each frame is decoded.
/// Not thread-safe: used by one decode call, or under the lock of ``APNGAnimatedProvider``.
final class APNGCompositor {
    let structure: APNGStructure
    private let data: Data
    private let header: PNGChunks
    private let budget: AnimationBudget
    /// Frame pixels decoded in the current pass.
    private(set) var workSpent = 0
    private var canvas: CompositingCanvas
    /// Index of the frame ``advance()`` draws next.
    private(set) var nextIndex = 0
    /// The last drawn frame and, for dispose `previous`, the canvas pixels under it before it was drawn.
    private var pending: (frame: APNGFrameInfo, saved: [UInt8]?)?

    init(data: Data, structure: APNGStructure, header: PNGChunks, budget: AnimationBudget) throws(ImageError) {
        self.data = data
        self.structure = structure
        self.header = header
        self.budget = budget
        canvas = try CompositingCanvas(width: structure.width, height: structure.height)
    }

    /// The canvas after drawing frame `index` (a frame taken from it stays unchanged by later draws).
    func canvas(at index: Int) throws(ImageError) -> CompositingCanvas {
        guard index >= 0 && index < structure.frames.count else {
            throw APNGStructure.damaged("frame \(index) out of range 0..<\(structure.frames.count)")
        }
        if index < nextIndex { try restart() }
        do {
            while nextIndex <= index { try advance() }
        } catch {
            // The canvas is only half updated: the next request starts over.
            try restart()
            throw error
        }
        return canvas
    }

    private func restart() throws(ImageError) {
        canvas = try CompositingCanvas(width: structure.width, height: structure.height)
        nextIndex = 0
        pending = nil
        workSpent = 0
    }

    /// Decodes the next frame, applies the previous frame's dispose op, then draws the new one.
    private func advance() throws(ImageError) {
        let frame = structure.frames[nextIndex]
        try budget.spendWork(frame.pixelCount, from: &workSpent)
        let pixels = try decode(frame, index: nextIndex)
        disposePrevious()
        let saved =
            frame.dispose == .previous && nextIndex > 0
            ? canvas.copy(x: frame.x, y: frame.y, width: frame.width, height: frame.height) : nil
        draw(pixels, frame: frame, blend: nextIndex == 0 ? .source : frame.blend)
        pending = (frame, saved)
        nextIndex += 1
    }

    /// The frame's own pixels, RGBA8 straight alpha, `width × height` of its fcTL.
    private func decode(_ frame: APNGFrameInfo, index: Int) throws(ImageError) -> PixelBuffer {
        let header = APNGFrameStream.header(of: frame, canvas: header)
        do {
            let pixels = try data.withUnsafeBytes { file in
                let stream = APNGFrameStream.build(frame, structure: structure, file: file)
                return try stream.withUnsafeBytes { try PNGDecoder.decodePixels($0, chunks: header, rgba: true) }
            }
            guard pixels.layout == .rgba8, pixels.width == frame.width, pixels.height == frame.height,
                pixels.bytesPerRow == frame.width * 4
            else { throw APNGStructure.damaged("frame \(index) decoded to an unexpected layout") }
            return pixels
        } catch {
            let cause = ImageError.wrap(error, as: .badImageData, stage: .decode)
            throw ImageError(
                cause.code, stage: .decode, message: "APNG: frame \(index) cannot be decoded: \(cause.message ?? "")",
                underlying: cause)
        }
    }

    /// Applies the previous frame's dispose op.
    private func disposePrevious() {
        guard let pending else { return }
        let frame = pending.frame
        switch frame.dispose {
        case .none: break
        case .background: canvas.clear(x: frame.x, y: frame.y, width: frame.width, height: frame.height)
        case .previous:
            if let saved = pending.saved {
                canvas.paste(saved, x: frame.x, y: frame.y, width: frame.width, height: frame.height)
            } else {
                canvas.clear(x: frame.x, y: frame.y, width: frame.width, height: frame.height)
            }
        }
    }

    /// Draws `pixels` (the frame's RGBA) at the frame's offset.
    private func draw(_ pixels: PixelBuffer, frame: APNGFrameInfo, blend: APNGFrameInfo.Blend) {
        let canvasWidth = structure.width
        let rowBytes = frame.width * 4
        pixels.withUnsafeBytes { src in
            canvas.withUnsafeMutableBytes { dst in
                for row in 0..<frame.height {
                    let s = row * rowBytes
                    let d = ((frame.y + row) * canvasWidth + frame.x) * 4
                    switch blend {
                    case .source:
                        UnsafeMutableRawPointer(dst.baseAddress! + d).copyMemory(
                            from: src.baseAddress! + s, byteCount: rowBytes)
                    case .over:
                        Self.blendOver(src.baseAddress! + s, onto: dst.baseAddress! + d, pixels: frame.width)
                    }
                }
            }
        }
    }

    /// Straight-alpha "over", the formula of the APNG reference decoder (apngdis): exact for opaque and fully
    /// transparent source pixels; otherwise colour = (src × sa + dst × da × (1 − sa)) / alpha rounded, with one
    /// reciprocal per pixel (the numerators stay below 2^24, so `Float` holds them exactly; a result may differ
    /// by one from exact rounding when it falls on a half).
    @inline(__always)
    static func blendOver(_ src: UnsafePointer<UInt8>, onto dst: UnsafeMutablePointer<UInt8>, pixels: Int) {
        for p in 0..<pixels {
            let i = p * 4
            let sa = Int(src[i + 3])
            if sa == 255 {
                dst[i] = src[i]
                dst[i + 1] = src[i + 1]
                dst[i + 2] = src[i + 2]
                dst[i + 3] = 255
                continue
            }
            if sa == 0 { continue }
            let da = Int(dst[i + 3])
            if da == 0 {
                dst[i] = src[i]
                dst[i + 1] = src[i + 1]
                dst[i + 2] = src[i + 2]
                dst[i + 3] = UInt8(sa)
                continue
            }
            let u = sa * 255
            let v = (255 - sa) * da
            let total = u + v
            let reciprocal = 1 / Float(total)
            for c in 0..<3 {
                let value = Float(Int(src[i + c]) * u + Int(dst[i + c]) * v) * reciprocal + 0.5
                dst[i + c] = UInt8(min(255, value))
            }
            dst[i + 3] = UInt8((total + 127) / 255)
        }
    }
}
