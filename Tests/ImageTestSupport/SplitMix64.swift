import Foundation

/// A small seeded generator, so a failing random schedule or program can be replayed from its printed seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator that yields the same sequence for the same seed.
    public init(seed: UInt64) { state = seed }

    /// The next value.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed from `variable` in the environment, else a random one; printed with `label` so a failure replays.
    public static func seed(from variable: String, label: String) -> UInt64 {
        let seed =
            ProcessInfo.processInfo.environment[variable].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...UInt64.max >> 1)
        print("\(label): seed \(seed) (replay with \(variable)=\(seed))")
        return seed
    }
}
