import Foundation

/// How the source is fitted into the requested box.
public enum Fit: String, Sendable, Hashable, CaseIterable {
    /// The whole image fits inside the box; one side may come out shorter (default). Alias `fit`.
    case contain
    /// The image covers the box and the overflow is cut at the gravity. Alias `fill` in imgproxy's terms is not
    /// taken: `fill` means stretch here, as in CSS `object-fit`.
    case cover
    /// Stretched to exactly the box, ignoring the aspect ratio. Alias `force`, `stretch`.
    case fill
    /// No scaling: a box-sized window is cut out of the source at the gravity (smaller when the source is).
    case crop

    /// Reads a `fit` value and its aliases.
    public init?(parameter: String) {
        switch parameter.lowercased() {
        case "contain", "fit", "inside": self = .contain
        case "cover": self = .cover
        case "fill", "force", "stretch": self = .fill
        case "crop": self = .crop
        default: return nil
        }
    }
}

/// Where a cut is placed when the image is larger than the box (``Fit/cover`` and ``Fit/crop``).
public enum Gravity: Sendable, Hashable, CustomStringConvertible {
    /// Centred (default).
    case center
    /// Against an edge or a corner: `dx`, `dy` are -1 (left/top), 0 (centre) or 1 (right/bottom).
    case edge(dx: Int, dy: Int)
    /// Centred on a point given as fractions of the width and height (0...1), kept inside the image.
    case focus(x: Double, y: Double)
    /// Where the image is busiest: edges, saturation and skin tones (`SmartCrop`), no model.
    case smart

    /// Reads `center`, the edges (`north`…`southwest`, `n`…`sw`, `top`/`bottom`/`left`/`right`), `smart`, or
    /// `fp:x:y` with `x` and `y` in 0...1.
    public init?(parameter: String) {
        let text = parameter.lowercased()
        if text.hasPrefix("fp:") {
            let parts = text.dropFirst(3).split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let x = Double(parts[0]), let y = Double(parts[1]), x.isFinite, y.isFinite,
                (0...1).contains(x), (0...1).contains(y)
            else { return nil }
            self = .focus(x: x, y: y)
            return
        }
        switch text {
        case "center", "centre", "c", "ce": self = .center
        case "smart", "sm": self = .smart
        case "north", "n", "no", "top": self = .edge(dx: 0, dy: -1)
        case "south", "s", "so", "bottom": self = .edge(dx: 0, dy: 1)
        case "east", "e", "ea", "right": self = .edge(dx: 1, dy: 0)
        case "west", "w", "we", "left": self = .edge(dx: -1, dy: 0)
        case "northeast", "ne", "noea": self = .edge(dx: 1, dy: -1)
        case "northwest", "nw", "nowe": self = .edge(dx: -1, dy: -1)
        case "southeast", "se", "soea": self = .edge(dx: 1, dy: 1)
        case "southwest", "sw", "sowe": self = .edge(dx: -1, dy: 1)
        default: return nil
        }
    }

    /// The canonical spelling, used in cache keys: `center`, `edge(1,-1)`, `fp(0.25,0.5)`, `smart`.
    public var description: String {
        switch self {
        case .center: "center"
        case .edge(let dx, let dy): "edge(\(dx),\(dy))"
        case .focus(let x, let y): "fp(\(Self.decimal(x)),\(Self.decimal(y)))"
        case .smart: "smart"
        }
    }

    /// Four decimals: enough for any image side below 10,000 px, and a stable key.
    static func decimal(_ value: Double) -> String { String(format: "%.4f", value) }
}
