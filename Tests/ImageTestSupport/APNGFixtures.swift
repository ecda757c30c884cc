import Foundation

/// A pure-Swift APNG writer for tests, independent of libpng and of the SDK's encoder: RGBA8 frames stored
/// uncompressed, as a list of chunks a test can reorder, drop or damage before ``file(_:)`` writes them with CRCs.
public enum APNGFixtures {
    /// What happens to a frame's region after it was shown.
    public enum Dispose: UInt8, Sendable, CaseIterable {
        case none = 0, background = 1, previous = 2
    }

    /// How a frame is drawn.
    public enum Blend: UInt8, Sendable, CaseIterable {
        case source = 0, over = 1
    }

    /// One animation frame: its rectangle, straight RGBA8 pixels (`width × height × 4`), ops and delay.
    public struct Frame: Sendable {
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int
        public var rgba: [UInt8]
        public var dispose: Dispose
        public var blend: Blend
        public var delayNumerator: UInt16
        public var delayDenominator: UInt16

        /// Creates a frame.
        public init(
            x: Int = 0, y: Int = 0, width: Int, height: Int, rgba: [UInt8], dispose: Dispose = .none,
            blend: Blend = .source, delayNumerator: UInt16 = 1, delayDenominator: UInt16 = 10
        ) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
            self.rgba = rgba
            self.dispose = dispose
            self.blend = blend
            self.delayNumerator = delayNumerator
            self.delayDenominator = delayDenominator
        }

        /// A frame of one colour.
        public static func solid(
            _ color: [UInt8], x: Int = 0, y: Int = 0, width: Int, height: Int, dispose: Dispose = .none,
            blend: Blend = .source
        ) -> Frame {
            Frame(
                x: x, y: y, width: width, height: height,
                rgba: Array((0..<width * height).map { _ in color }.joined()), dispose: dispose, blend: blend)
        }
    }

    /// One chunk before serialization.
    public struct Chunk: Sendable {
        public var type: String
        public var payload: [UInt8]
        /// Creates a chunk.
        public init(_ type: String, _ payload: [UInt8]) {
            self.type = type
            self.payload = payload
        }
    }

    /// The chunks of an APNG on a `width × height` canvas: IHDR, acTL, then the default image and the frames.
    ///
    /// With `defaultImage` nil the first frame is the default image (its fcTL before the IDAT; it must cover the
    /// canvas); otherwise `defaultImage` (canvas-sized RGBA) is an IDAT that is not part of the animation.
    /// `numFrames` overrides acTL's count, `splitData` writes each frame's data as that many chunks.
    public static func chunks(
        width: Int, height: Int, frames: [Frame], defaultImage: [UInt8]? = nil, loops: UInt32 = 0,
        numFrames: UInt32? = nil, splitData: Int = 1
    ) -> [Chunk] {
        var out = [
            Chunk("IHDR", PNGFixtures.ihdr(width: width, height: height, bitDepth: 8, colorType: 6, interlaced: false)),
            Chunk("acTL", PNGFixtures.be32(numFrames ?? UInt32(frames.count)) + PNGFixtures.be32(loops)),
        ]
        var sequence: UInt32 = 0
        if let defaultImage {
            out += split(PNGFixtures.zlibStored(raw(defaultImage, width: width, height: height)), parts: splitData)
                .map { Chunk("IDAT", $0) }
        }
        for (index, frame) in frames.enumerated() {
            out.append(Chunk("fcTL", frameControl(frame, sequence: sequence)))
            sequence += 1
            let data = PNGFixtures.zlibStored(raw(frame.rgba, width: frame.width, height: frame.height))
            for part in split(data, parts: splitData) {
                if index == 0 && defaultImage == nil {
                    out.append(Chunk("IDAT", part))
                } else {
                    out.append(Chunk("fdAT", PNGFixtures.be32(sequence) + part))
                    sequence += 1
                }
            }
        }
        out.append(Chunk("IEND", []))
        return out
    }

    /// Serializes chunks after the PNG signature, each with its length and CRC.
    public static func file(_ chunks: [Chunk]) -> Data {
        var out = Data(PNGFixtures.signature)
        for chunk in chunks { out += PNGFixtures.chunk(chunk.type, chunk.payload) }
        return out
    }

    /// An fcTL payload (26 bytes).
    public static func frameControl(_ frame: Frame, sequence: UInt32) -> [UInt8] {
        PNGFixtures.be32(sequence) + PNGFixtures.be32(UInt32(frame.width)) + PNGFixtures.be32(UInt32(frame.height))
            + PNGFixtures.be32(UInt32(frame.x)) + PNGFixtures.be32(UInt32(frame.y))
            + [UInt8(frame.delayNumerator >> 8), UInt8(frame.delayNumerator & 0xFF)]
            + [UInt8(frame.delayDenominator >> 8), UInt8(frame.delayDenominator & 0xFF)]
            + [frame.dispose.rawValue, frame.blend.rawValue]
    }

    /// Scanlines with filter type 0.
    static func raw(_ rgba: [UInt8], width: Int, height: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((width * 4 + 1) * height)
        for y in 0..<height {
            out.append(0)
            out += rgba[(y * width * 4)..<((y + 1) * width * 4)]
        }
        return out
    }

    static func split(_ data: [UInt8], parts: Int) -> [[UInt8]] {
        let count = max(1, min(parts, data.count))
        let size = (data.count + count - 1) / count
        return stride(from: 0, to: data.count, by: size).map { Array(data[$0..<min(data.count, $0 + size)]) }
    }

    /// What the frames look like composited, by the APNG specification, in floating point rounded to 8 bits after
    /// each frame (the canvas a decoder keeps): the plain reference model the decoder is checked against.
    public static func referenceComposite(width: Int, height: Int, frames: [Frame]) -> [[UInt8]] {
        var canvas = [Double](repeating: 0, count: width * height * 4)
        var shown: [[UInt8]] = []
        for (index, frame) in frames.enumerated() {
            let saved = canvas
            for row in 0..<frame.height {
                for column in 0..<frame.width {
                    let s = (row * frame.width + column) * 4
                    let d = ((frame.y + row) * width + frame.x + column) * 4
                    let src = (0..<4).map { Double(frame.rgba[s + $0]) / 255 }
                    if frame.blend == .source || index == 0 {
                        for c in 0..<4 { canvas[d + c] = src[c] }
                    } else {
                        let sa = src[3]
                        let da = canvas[d + 3]
                        let oa = sa + da * (1 - sa)
                        if oa > 0 {
                            for c in 0..<3 { canvas[d + c] = (src[c] * sa + canvas[d + c] * da * (1 - sa)) / oa }
                        }
                        canvas[d + 3] = oa
                    }
                    for c in 0..<4 { canvas[d + c] = (canvas[d + c] * 255).rounded() / 255 }
                }
            }
            shown.append(canvas.map { UInt8(($0 * 255).rounded()) })
            let dispose = index == 0 && frame.dispose == .previous ? .background : frame.dispose
            for row in 0..<frame.height {
                for column in 0..<frame.width {
                    let d = ((frame.y + row) * width + frame.x + column) * 4
                    for c in 0..<4 {
                        switch dispose {
                        case .none: break
                        case .background: canvas[d + c] = 0
                        case .previous: canvas[d + c] = saved[d + c]
                        }
                    }
                }
            }
        }
        return shown
    }
}
