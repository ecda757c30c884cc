/// What an option, context key, decode or encode option, coder option or control changes about a load.
///
/// Every public knob of the SDK declares its effects once (see ``OptionCatalog``), and every stage of the main line
/// derives its rule from the declaration rather than keeping its own list: the cache key, which loads may share a
/// download, a decode or a product, whether a failure may block the URL for everyone, whether an image already
/// decoded with the defaults may be brought to the option, what previews apply, and how a cache miss ends. An
/// option that changes nothing but when or where things run declares ``scheduling``.
public struct OptionEffect: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates effects from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The bytes fetched: what the loader sends or receives, where it connects, how long it may take. Loads share a
    /// download only when such options are equal (or the option isolates the download).
    public static let bytesFetched = OptionEffect(rawValue: 1 << 0)
    /// The decoded pixels (size, frames, orientation, colour, a coder's own options).
    public static let pixels = OptionEffect(rawValue: 1 << 1)
    /// The transform applied to the decoded image.
    public static let transform = OptionEffect(rawValue: 1 << 2)
    /// What is stored, where, or under which key (levels, key base, partition, serializer, encoder settings).
    public static let stored = OptionEffect(rawValue: 1 << 3)
    /// Which sources may answer: the cache levels asked, the loader, the failed-URL list.
    public static let sources = OptionEffect(rawValue: 1 << 4)
    /// A limit of this request only: it may refuse an image, never changes a success's pixels.
    public static let budget = OptionEffect(rawValue: 1 << 5)
    /// Nothing but scheduling and delivery: priority, threads, callbacks, what a target displays.
    public static let scheduling = OptionEffect(rawValue: 1 << 6)

    /// Each effect with its name, in declaration order.
    public static let named: [(OptionEffect, String)] = [
        (.bytesFetched, "bytes fetched"), (.pixels, "pixels"), (.transform, "transform"), (.stored, "stored"),
        (.sources, "sources"), (.budget, "budget"), (.scheduling, "scheduling"),
    ]

    /// The effects' names joined by `+`.
    public var description: String {
        let names = Self.named.filter { contains($0.0) }.map(\.1)
        return names.isEmpty ? "none" : names.joined(separator: "+")
    }
}

/// One option's declaration: its effects and the rules that follow from them at each seam.
public struct OptionTraits: Hashable, Sendable, CustomStringConvertible {
    /// How an option shows in the cache key (see the key table of the `CacheKeys` article).
    public enum KeyRule: Hashable, Sendable {
        /// Not in the key: the option changes nothing a cached entry holds.
        case none
        /// The key's base (the cache-key filter).
        case base
        /// A part of the key, `name(value)`.
        case part(String)
        /// Not in the key; the load skips the cache levels that can't honour it (a variant is never stored under
        /// the key, and a cached image it can't use is not served).
        case bypass
    }

    /// How an option affects sharing a download with other loads.
    public enum DownloadRule: Hashable, Sendable {
        /// Shared whatever its value: it doesn't change the transfer.
        case shared
        /// A field of the download's job key: loads share a download only when it is equal.
        case field(String)
        /// The load gets a download of its own while the option is set.
        case isolates
    }

    /// What the option changes.
    public let effects: OptionEffect
    /// How it shows in the cache key.
    public let key: KeyRule
    /// How it affects sharing a download.
    public let download: DownloadRule
    /// For a ``OptionEffect/pixels`` option: true when an image already decoded with the default options can be
    /// brought to this option's pixels by working on those pixels (a frame taken, pixels resampled); false when the
    /// option acts inside the decoder (orientation left raw, colour conversion of the file's own samples, a coder's
    /// own option), so only a decode of the bytes honours it. Previews always get the whole decode.
    public let appliesToDecodedImage: Bool
    /// The flag without which the option changes nothing, or nil when it acts on its own: a context key that only
    /// tunes what a flag turns on (`imageScaleDownLimitBytes` is the limit of `scaleDownLargeImages`). A load that
    /// sets the option without the flag has none of its effects.
    public let actsOnlyWith: ImageOptions.Flag?

    /// Declares an option.
    public init(
        _ effects: OptionEffect, key: KeyRule = .none, download: DownloadRule = .shared,
        appliesToDecodedImage: Bool = false, actsOnlyWith: ImageOptions.Flag? = nil
    ) {
        self.effects = effects
        self.key = key
        self.download = download
        self.appliesToDecodedImage = appliesToDecodedImage
        self.actsOnlyWith = actsOnlyWith
    }

    /// True when the option acts on a load with `options`: always, unless it acts only with a flag they don't set.
    public func acts(with options: ImageOptions) -> Bool {
        actsOnlyWith.map { options.contains(ImageOptions($0)) } ?? true
    }

    /// The effects of the option on a load with `options`: ``effects``, or none when it does not act there.
    public func effects(with options: ImageOptions) -> OptionEffect { acts(with: options) ? effects : [] }

    /// Nothing but scheduling.
    public static let scheduling = OptionTraits(.scheduling)

    /// True when a failure of a load that set this option could differ from a plain load's failure on the same
    /// origin: it fetched other bytes, decoded other pixels or refused by a limit of its own. Such a failure never
    /// goes on the failed-URL list, which keeps only verdicts every load of the URL would reach.
    public var mayChangeVerdict: Bool { !effects.isDisjoint(with: [.bytesFetched, .pixels, .budget]) }

    /// "effects; key …; download …".
    public var description: String {
        var text = effects.description
        switch key {
        case .none: break
        case .base: text += "; key base"
        case .part(let name): text += "; key part \(name)"
        case .bypass: text += "; bypasses levels"
        }
        switch download {
        case .shared: break
        case .field(let name): text += "; download key \(name)"
        case .isolates: text += "; own download"
        }
        if effects.contains(.pixels) { text += appliesToDecodedImage ? "; from a decoded image" : "; in the decoder" }
        if let actsOnlyWith { text += "; only with \(actsOnlyWith)" }
        return text
    }
}
