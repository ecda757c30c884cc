import Foundation
import ImageCore

/// What one thumbnail request asks for, validated: the source and every option that changes the output.
///
/// Equal options (and an equal source) give equal bytes, so ``canonicalDescription`` is part of the result's
/// cache key and of its ETag. Value type; thread-safe.
public struct ThumbnailOptions: Hashable, Sendable {
    /// The source image.
    public var source: SourceURL
    /// The box before the device-pixel ratio: `w` and `h` (a missing one takes the other's value).
    public var size: PixelSize
    /// How the source is fitted into the box.
    public var fit: Fit
    /// Where ``Fit/cover`` and ``Fit/crop`` cut.
    public var gravity: Gravity
    /// Device-pixel ratio: the box in pixels is ``size`` times this.
    public var dpr: Double
    /// Whether an image smaller than the box is scaled up (default no).
    public var enlarge: Bool
    /// Encoder quality 1...100, or nil for the server's default for the output format (or for ``autoQuality``).
    public var quality: Int?
    /// `q=auto`: the lowest quality whose output stays within the server's perceptual distance for the output
    /// format (butteraugli), never above the server's default quality. Exclusive with ``quality``.
    public var autoQuality: Bool = false
    /// The requested output format.
    public var format: FormatRequest
    /// Whether an animated source stays animated (every frame resized) rather than becoming its first frame.
    public var animated: Bool

    /// The box in pixels: ``size`` × ``dpr``, rounded, at least 1.
    public var box: PixelSize {
        PixelSize(
            width: max(1, Int((Double(size.width) * dpr).rounded())),
            height: max(1, Int((Double(size.height) * dpr).rounded())))
    }

    /// Every option in a fixed order and spelling (the source is keyed separately), e.g.
    /// `fit=cover;box=400x300;g=smart;enlarge=0;q=-;anim=0` (`q=auto` for ``autoQuality``). The format is keyed by
    /// its resolved encoding.
    public var canonicalDescription: String {
        let box = box
        let q = autoQuality ? "auto" : quality.map(String.init) ?? "-"
        return "fit=\(fit.rawValue);box=\(box.width)x\(box.height);g=\(gravity);enlarge=\(enlarge ? 1 : 0);"
            + "q=\(q);anim=\(animated ? 1 : 0)"
    }
}

/// Reads ``ThumbnailOptions`` from a request's query pairs, applying presets and the server's limits.
///
/// Parameters: `url` (required), `w`, `h` (1...``Limits/maxSide``, at least one; a missing one takes the other's
/// value), `fit` (`contain` default, `cover`, `fill`/`force`, `crop`), `gravity` (see ``Gravity``), `dpr`
/// (0 < dpr ≤ ``Limits/maxDPR``), `enlarge` (0/1), `q` (1...100, or `auto`: ``ThumbnailOptions/autoQuality``),
/// `format` (`auto`, `source`, `jpeg`, `png`, `webp`, `avif`, `gif`, or a placeholder string: `blurhash`,
/// `thumbhash`), `anim` (0/1), `preset` (comma-separated names, applied in order), and `sig`/`expires`
/// (checked by `URLSigner`, ignored here). Unknown or repeated parameters are refused, so two spellings of one
/// request can't make two cache entries. Value type; thread-safe.
public struct OptionsParser: Sendable {
    /// What the server allows.
    public struct Limits: Sendable, Equatable {
        /// The largest box side in pixels, after the device-pixel ratio.
        public var maxSide: Int
        /// Allowed `w` values; empty allows any from 1 to ``maxSide``.
        public var allowedWidths: Set<Int>
        /// Allowed `h` values; empty allows any.
        public var allowedHeights: Set<Int>
        /// The largest device-pixel ratio.
        public var maxDPR: Double
        /// Whether `anim=1` is accepted.
        public var allowsAnimation: Bool
        /// Whether requests may only name presets (plus `url`, `sig`, `expires`).
        public var presetsOnly: Bool

        /// Creates limits; the defaults are the server's.
        public init(
            maxSide: Int = 2048, allowedWidths: Set<Int> = [], allowedHeights: Set<Int> = [], maxDPR: Double = 4,
            allowsAnimation: Bool = true, presetsOnly: Bool = false
        ) {
            self.maxSide = maxSide
            self.allowedWidths = allowedWidths
            self.allowedHeights = allowedHeights
            self.maxDPR = maxDPR
            self.allowsAnimation = allowsAnimation
            self.presetsOnly = presetsOnly
        }
    }

    /// A query refused with 400; `message` names the parameter.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong.
        public let message: String
        /// `message`.
        public var description: String { message }

        /// Neither `w` nor `h` was given.
        public static let missingSize = Invalid(message: "give w, h or both")
    }

    /// The parameters a request may carry.
    public static let parameters: Set<String> = [
        "url", "w", "h", "fit", "gravity", "dpr", "enlarge", "q", "format", "anim", "preset", "sig", "expires",
    ]
    /// What a presets-only request may carry.
    public static let presetsOnlyParameters: Set<String> = ["url", "preset", "sig", "expires"]

    /// The limits applied.
    public let limits: Limits
    /// The named presets.
    public let presets: Presets

    /// Creates a parser.
    public init(limits: Limits = Limits(), presets: Presets = Presets()) {
        self.limits = limits
        self.presets = presets
    }

    /// Validates `pairs` (decoded query pairs, in order).
    ///
    /// - Throws: ``Invalid`` naming the first bad parameter.
    public func parse(_ pairs: [(name: String, value: String)]) throws(Invalid) -> ThumbnailOptions {
        var given: [String: String] = [:]
        for (name, value) in pairs {
            guard Self.parameters.contains(name) else { throw Invalid(message: "unknown parameter \(name.prefix(40))") }
            guard given[name] == nil else { throw Invalid(message: "\(name) is given twice") }
            if limits.presetsOnly && !Self.presetsOnlyParameters.contains(name) {
                throw Invalid(message: "this server accepts presets only (\(name) is not allowed)")
            }
            given[name] = value
        }
        // The default preset, then the named ones in order, then the request's own parameters.
        var effective = presets.values(named: Presets.defaultName) ?? [:]
        if let names = given["preset"] {
            for name in names.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                guard let values = presets.values(named: name) else {
                    throw Invalid(message: "unknown preset \(name.prefix(40))")
                }
                effective.merge(values) { $1 }
            }
        } else if limits.presetsOnly {
            throw Invalid(message: "this server accepts presets only: name one with preset=")
        }
        effective.merge(given.filter { $0.key != "preset" }) { $1 }
        return try options(from: effective)
    }

    private func options(from values: [String: String]) throws(Invalid) -> ThumbnailOptions {
        guard let text = values["url"], !text.isEmpty else { throw Invalid(message: "url is required") }
        let source: SourceURL
        do throws(SourceURL.Invalid) {
            source = try SourceURL(text)
        } catch {
            throw Invalid(message: "url: \(error.message)")
        }
        func side(_ name: String, allowed: Set<Int>) throws(Invalid) -> Int? {
            guard let value = values[name] else { return nil }
            // Compared, not `(1...maxSide).contains`: a range with maxSide < 1 would trap.
            guard value.count <= 6, let number = Int(value), number >= 1, number <= limits.maxSide else {
                throw Invalid(message: "\(name) must be an integer from 1 to \(limits.maxSide)")
            }
            guard allowed.isEmpty || allowed.contains(number) else {
                throw Invalid(
                    message: "\(name) must be one of \(allowed.sorted().map(String.init).joined(separator: ", "))")
            }
            return number
        }
        let w = try side("w", allowed: limits.allowedWidths)
        let h = try side("h", allowed: limits.allowedHeights)
        guard let width = w ?? h, let height = h ?? w else { throw Invalid.missingSize }
        guard let fit = Fit(parameter: values["fit"] ?? "contain") else {
            throw Invalid(message: "fit must be contain, cover, fill (force) or crop")
        }
        guard let gravity = Gravity(parameter: values["gravity"] ?? "center") else {
            throw Invalid(message: "gravity must be center, an edge (north … southwest), smart or fp:x:y")
        }
        var dpr = 1.0
        if let text = values["dpr"] {
            guard text.count <= 8, let value = Double(text), value.isFinite, value > 0, value <= limits.maxDPR else {
                throw Invalid(message: "dpr must be a number above 0 and at most \(limits.maxDPR)")
            }
            dpr = (value * 100).rounded() / 100
        }
        let enlarge = try flag("enlarge", values)
        var quality: Int?
        var autoQuality = false
        if let text = values["q"] {
            if text == "auto" {
                autoQuality = true
            } else {
                guard text.count <= 3, let value = Int(text), (1...100).contains(value) else {
                    throw Invalid(message: "q must be an integer from 1 to 100, or auto")
                }
                quality = value
            }
        }
        guard let format = FormatRequest(parameter: values["format"] ?? "auto") else {
            throw Invalid(message: "format must be auto, source, jpeg, png, webp, avif, gif, blurhash or thumbhash")
        }
        let animated = try flag("anim", values)
        if animated && !limits.allowsAnimation { throw Invalid(message: "animated output is disabled on this server") }
        let options = ThumbnailOptions(
            source: source, size: PixelSize(width: width, height: height), fit: fit, gravity: gravity, dpr: dpr,
            enlarge: enlarge, quality: quality, autoQuality: autoQuality, format: format, animated: animated)
        guard options.box.width <= limits.maxSide, options.box.height <= limits.maxSide else {
            throw Invalid(message: "w and h times dpr must be at most \(limits.maxSide)")
        }
        return options
    }

    private func flag(_ name: String, _ values: [String: String]) throws(Invalid) -> Bool {
        switch values[name] {
        case nil, "0", "false": return false
        case "1", "true": return true
        default: throw Invalid(message: "\(name) must be 0 or 1")
        }
    }
}

/// Named sets of parameters (`thumb` → `w=200&h=200&fit=cover`); a request names them with `preset=`.
///
/// A preset named `default` applies to every request before the named ones. Presets may not name `url`,
/// `preset`, `sig` or `expires`. Value type; thread-safe.
public struct Presets: Sendable, Equatable {
    /// The preset applied to every request, when defined.
    public static let defaultName = "default"

    private let table: [String: [String: String]]

    /// The preset names.
    public var names: [String] { table.keys.sorted() }

    /// No presets.
    public init() { table = [:] }

    /// Reads presets written as query strings.
    ///
    /// - Throws: ``OptionsParser/Invalid`` naming the preset and the parameter that is unknown, repeated or not
    ///   allowed in a preset.
    public init(_ definitions: [String: String]) throws(OptionsParser.Invalid) {
        var table: [String: [String: String]] = [:]
        for (name, query) in definitions {
            guard !name.isEmpty, !name.contains(",") else {
                throw OptionsParser.Invalid(message: "preset name \(name)")
            }
            let pairs: [(name: String, value: String)]
            do throws(QueryString.Invalid) {
                pairs = try QueryString.pairs(query)
            } catch {
                throw OptionsParser.Invalid(message: "preset \(name): bad encoding in \(error.pair)")
            }
            var values: [String: String] = [:]
            for (key, value) in pairs {
                guard OptionsParser.parameters.contains(key), !OptionsParser.presetsOnlyParameters.contains(key),
                    values[key] == nil
                else { throw OptionsParser.Invalid(message: "preset \(name): parameter \(key) not allowed") }
                values[key] = value
            }
            table[name] = values
        }
        self.table = table
    }

    /// The parameters of preset `name`, if defined.
    public func values(named name: String) -> [String: String]? { table[name] }
}
