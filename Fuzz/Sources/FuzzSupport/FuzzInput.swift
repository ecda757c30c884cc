import Foundation

/// One fuzzer input: the bytes, plus a deterministic stream of choices derived from them.
///
/// Choices come from a hash of the whole input (so seed files from the corpus stay valid images) or, for the
/// round-trip target, are read from the front of the input. The same input always makes the same choices, so a
/// crash reproduces from its file alone.
public struct FuzzInput {
    /// The input bytes.
    public let data: Data
    private var state: UInt64

    /// Copies the fuzzer's buffer.
    public init(_ bytes: UnsafePointer<UInt8>?, _ count: Int) {
        self.init(
            Data(
                bytes.map { UnsafeBufferPointer(start: $0, count: count) } ?? UnsafeBufferPointer(start: nil, count: 0))
        )
    }

    /// Wraps `data` (tests and the replay tool).
    public init(_ data: Data) {
        self.data = data
        // FNV-1a of the input seeds the choice stream.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        state = hash | 1
    }

    /// The next pseudo-random value (xorshift64*), a pure function of the input.
    public mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_f491_4f6c_dd1d
    }

    /// A choice in `0..<bound` (0 when `bound` is not positive).
    public mutating func choose(_ bound: Int) -> Int {
        bound > 0 ? Int(next() % UInt64(bound)) : 0
    }
}

/// Reads choices from the front of a buffer, then zeros once it runs out.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ data: Data) { bytes = [UInt8](data) }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound) + 1
        let raw = UInt64(byte()) << 8 | UInt64(byte())
        return range.lowerBound + Int(raw % span)
    }

    /// A double that is sometimes hostile: NaN, ±infinity, huge, negative.
    mutating func hostileDouble(typical: ClosedRange<Double>) -> Double {
        switch byte() % 16 {
        case 0: return .nan
        case 1: return .infinity
        case 2: return -.infinity
        case 3: return 1e300
        case 4: return -1
        default:
            let unit = Double(int(0...10_000)) / 10_000
            return typical.lowerBound + unit * (typical.upperBound - typical.lowerBound)
        }
    }

    /// What is left after the choices.
    var rest: [UInt8] { offset < bytes.count ? Array(bytes[offset...]) : [] }
}
