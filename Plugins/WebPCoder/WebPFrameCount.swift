import Foundation

/// Counts the frames of a WebP file from its RIFF chunks, without decoding (what ``WebPCoder/probe(_:)`` reports).
enum WebPFrameCount {
    /// 1 for a still; the number of `ANMF` chunks of an animation; nil when the chunks end early (a prefix) or an
    /// animation has none.
    static func count(_ data: Data, hasAnimation: Bool) -> Int? {
        guard hasAnimation else { return 1 }
        return data.withUnsafeBytes { raw -> Int? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= 12 else { return nil }
            var offset = 12
            var frames = 0
            while offset < bytes.count {
                guard bytes.count - offset >= 8 else { return nil }
                let size =
                    Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16
                    | Int(bytes[offset + 7]) << 24
                if bytes[offset] == 0x41, bytes[offset + 1] == 0x4E, bytes[offset + 2] == 0x4D,
                    bytes[offset + 3] == 0x46
                {
                    frames += 1  // "ANMF"
                }
                let padded = size + (size & 1)
                guard padded <= bytes.count - offset - 8 else { return nil }
                offset += 8 + padded
            }
            return frames > 0 ? frames : nil  // an animation without frames: the decoder says what is wrong
        }
    }
}
