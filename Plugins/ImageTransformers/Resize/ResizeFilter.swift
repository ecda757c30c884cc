import Foundation

/// The reconstruction filter a ``ResizeTransformer`` resamples with.
///
/// All filters are applied separably (rows, then columns) and widened by the reduction factor when shrinking, so
/// every source pixel contributes (no aliasing from skipped pixels).
public enum ResizeFilter: String, Hashable, Sendable, CaseIterable {
    /// Lanczos windowed sinc with 3 lobes: the sharpest, the default (Pillow's `LANCZOS`, vips' `lanczos3`).
    case lanczos3
    /// Catmull-Rom cubic (Keys cubic with a = -0.5; Pillow's `BICUBIC`): slightly softer, fewer taps, no ringing
    /// beyond one lobe.
    case catmullRom
    /// Box / area average: each output pixel is the mean of the source area it covers (exact for integer
    /// reductions); nearest-neighbour when enlarging.
    case box

    /// Half-width of the kernel in source pixels at scale 1.
    var support: Double {
        switch self {
        case .lanczos3: 3
        case .catmullRom: 2
        case .box: 0.5
        }
    }

    /// The kernel value at distance `x` (in filter units).
    func weight(_ x: Double) -> Double {
        switch self {
        case .lanczos3:
            if x == 0 { return 1 }
            guard x > -3 && x < 3 else { return 0 }
            let px = Double.pi * x
            return 3 * sin(px) * sin(px / 3) / (px * px)
        case .catmullRom:
            let a = -0.5
            let t = abs(x)
            if t < 1 { return ((a + 2) * t - (a + 3)) * t * t + 1 }
            if t < 2 { return (((t - 5) * t + 8) * t - 4) * a }
            return 0
        case .box:
            // Half-open so a source pixel on a boundary belongs to exactly one output pixel.
            return x > -0.5 && x <= 0.5 ? 1 : 0
        }
    }
}
