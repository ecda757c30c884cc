internal import CGIF
import ImageCore

/// Decodes a GIF's frames in order and composites them onto the logical-screen canvas (RGBA, straight alpha).
///
/// Keeps one giflib handle, the canvas and, for "restore previous" frames, the rectangle it will restore, so
/// playing frames in order costs one frame decode each; asking for an earlier frame restarts from frame 0.
/// Frames partly outside the canvas are clipped; palette indices without a colour are not drawn. A frame whose
/// clipped rectangle is empty is not decompressed at all, and decompression of a frame stops after its last row
/// that reaches the canvas, so pixels that are clipped away cost nothing. The decompressed pixels of one pass
/// through the animation are charged to ``AnimationBudget/maxWorkPixelCount`` (the pass restarts with frame 0).
/// Not thread-safe: used by one decode call, or under the lock of ``GIFAnimatedProvider``.
final class GIFCompositor {
    let structure: GIFStructure
    private let budget: AnimationBudget
    /// Frame pixels decompressed in the current pass.
    private(set) var workSpent = 0
    private let bytes: [UInt8]
    private var handle: GIFDecodeHandle
    private var canvas: CompositingCanvas
    private var row: [UInt8] = []
    /// Index of the frame ``advance()`` draws next.
    private(set) var nextIndex = 0
    /// The last drawn frame, its clipped rectangle and, for disposal 3, the pixels under it before it was drawn.
    private var pending: (frame: GIFFrameInfo, rect: ClipRect, saved: [UInt8]?)?

    /// A frame's rectangle clipped to the canvas. Never inverted: an empty rectangle has `x0 == x1` or
    /// `y0 == y1`, so loops over its rows and columns run zero times.
    struct ClipRect {
        let x0: Int, y0: Int, x1: Int, y1: Int
        var isEmpty: Bool { x0 >= x1 || y0 >= y1 }
        var width: Int { x1 - x0 }
        var height: Int { y1 - y0 }

        /// The part of the frame `left, top, width, height` that lies on a `canvasWidth × canvasHeight` canvas.
        init(left: Int, top: Int, width: Int, height: Int, canvasWidth: Int, canvasHeight: Int) {
            x0 = min(max(0, left), canvasWidth)
            y0 = min(max(0, top), canvasHeight)
            x1 = max(x0, min(canvasWidth, left + width))
            y1 = max(y0, min(canvasHeight, top + height))
        }
    }

    /// Counts work across compositors for tests; bound per task with `GIFCompositor.$meter.withValue`.
    final class WorkMeter: @unchecked Sendable {
        // Confined to the task that binds it (decoding is synchronous on that task); no lock needed.
        var framesDecompressed = 0
        var pixelsDecompressed = 0
    }

    @TaskLocal static var meter: WorkMeter?

    init(bytes: [UInt8], structure: GIFStructure, budget: AnimationBudget) throws(ImageError) {
        self.bytes = bytes
        self.structure = structure
        self.budget = budget
        self.handle = try GIFDecodeHandle(bytes: bytes)
        self.canvas = try CompositingCanvas(width: structure.width, height: structure.height)
    }

    /// The canvas after drawing frame `index` (a frame taken from it stays unchanged by later draws).
    func canvas(at index: Int) throws(ImageError) -> CompositingCanvas {
        guard index >= 0 && index < structure.frames.count else {
            throw GIFErrors.malformed("frame \(index) out of range 0..<\(structure.frames.count)")
        }
        if index < nextIndex { try restart() }
        while nextIndex <= index { try advance() }
        return canvas
    }

    private func restart() throws(ImageError) {
        handle = try GIFDecodeHandle(bytes: bytes)
        canvas = try CompositingCanvas(width: structure.width, height: structure.height)
        nextIndex = 0
        pending = nil
        workSpent = 0
    }

    /// Disposes of the previous frame, then decodes and draws the next one.
    private func advance() throws(ImageError) {
        let frame = structure.frames[nextIndex]
        let rect = structure.clip(frame)
        let rows = structure.rowsToDecompress(frame)
        try budget.spendWork(rows * frame.width, from: &workSpent)
        disposePrevious()
        guard rows > 0 else {
            // Nothing of this frame reaches the canvas: no pixels to decompress, nothing to dispose of later.
            pending = nil
            nextIndex += 1
            return
        }
        if let meter = Self.meter {
            meter.framesDecompressed += 1
            meter.pixelsDecompressed += rows * frame.width
        }
        let saved =
            frame.disposal == 3
            ? canvas.copy(x: rect.x0, y: rect.y0, width: rect.width, height: rect.height) : nil

        handle.reader.cursor = frame.descriptorOffset
        guard try handle.nextRecord() == IMAGE_DESC_RECORD_TYPE else {
            throw GIFErrors.malformed("frame \(nextIndex) has no image descriptor")
        }
        try handle.readImageDescriptor()
        let desc = handle.gif.pointee.Image
        let palette = Self.palette(desc.ColorMap ?? handle.gif.pointee.SColorMap, transparent: frame.transparentIndex)
        if row.count != frame.width { row = [UInt8](repeating: 0, count: frame.width) }
        if desc.Interlace {
            for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
                for y in stride(from: start, to: frame.height, by: step) { try drawRow(y, of: frame, rect, palette) }
            }
        } else {
            // Rows below the canvas are never decompressed (LZW data is sequential: rows above must be).
            for y in 0..<rows { try drawRow(y, of: frame, rect, palette) }
        }
        pending = (frame, rect, saved)
        nextIndex += 1
    }

    /// Decodes frame row `y` and draws its opaque pixels that fall inside the canvas.
    private func drawRow(_ y: Int, of frame: GIFFrameInfo, _ rect: ClipRect, _ palette: [UInt32]) throws(ImageError) {
        try handle.readRow(&row)
        let canvasY = frame.top + y
        guard !rect.isEmpty, canvasY >= rect.y0 && canvasY < rect.y1 else { return }
        let width = structure.width
        row.withUnsafeBufferPointer { indices in
            palette.withUnsafeBufferPointer { colors in
                canvas.withUnsafeMutableBytes { pixels in
                    let out = UnsafeMutableRawPointer(pixels.baseAddress!) + (canvasY * width + rect.x0) * 4
                    let first = rect.x0 - frame.left
                    for x in 0..<rect.width {
                        // One 4-byte store per drawn pixel; 0 marks an index that is not drawn.
                        let color = colors[Int(indices[first + x])]
                        if color != 0 { out.storeBytes(of: color, toByteOffset: x * 4, as: UInt32.self) }
                    }
                }
            }
        }
    }

    /// Applies the previous frame's disposal: clear to transparent (2) or restore what was under it (3).
    private func disposePrevious() {
        guard let pending, !pending.rect.isEmpty else { return }
        switch pending.frame.disposal {
        case 2:
            let rect = pending.rect
            canvas.clear(x: rect.x0, y: rect.y0, width: rect.width, height: rect.height)
        case 3:
            let rect = pending.rect
            if let saved = pending.saved {
                canvas.paste(saved, x: rect.x0, y: rect.y0, width: rect.width, height: rect.height)
            }
        default:
            break
        }
    }

    /// A 256-entry table of opaque RGBA pixels as they lie in memory (R, G, B, 255 in byte order); 0 marks the
    /// transparent index and indices the palette lacks (an opaque pixel is never 0: its alpha byte is 255).
    private static func palette(_ map: UnsafeMutablePointer<ColorMapObject>?, transparent: Int?) -> [UInt32] {
        var table = [UInt32](repeating: 0, count: 256)
        if let map, let colors = map.pointee.Colors {
            for i in 0..<min(256, max(0, Int(map.pointee.ColorCount))) {
                let rgba = UInt32(colors[i].Red) | UInt32(colors[i].Green) << 8 | UInt32(colors[i].Blue) << 16
                table[i] = (rgba | 0xFF00_0000).littleEndian
            }
        }
        if let transparent, transparent < 256 { table[transparent] = 0 }
        return table
    }
}
