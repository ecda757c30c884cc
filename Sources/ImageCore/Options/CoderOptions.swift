/// Names one option of a custom coder and types its value (SDWebImage's custom `SDImageCoderOption` keys).
///
/// Declare one type per option, then set and read it through ``CoderOptions``:
///
///     enum PPMGamma: CoderOptionKey {
///         typealias Value = Double
///         static let name = "ppm.gamma"
///     }
///     context[coderOption: PPMGamma.self] = 2.2                         // a load's decode options
///     let gamma = options.coderOptions[PPMGamma.self] ?? 1              // inside the coder's decode
///
/// An option that changes the decoded image (``changesImage``, the default) is part of the cache key, written as
/// `name=description`, so loads with different values never share a cache entry or a decode; keep
/// ``keyDescription(_:)`` deterministic across processes. An option that doesn't (a hint, a cancellation
/// token…) says so and only separates decodes, never cache entries.
public protocol CoderOptionKey: Sendable {
    /// The option's value.
    associatedtype Value: Hashable & Sendable
    /// The option's name, unique among the options of the coders a process uses (prefix it with the coder's).
    static var name: String { get }
    /// True when the option changes the decoded image, so it is part of the cache key. Default: true.
    static var changesImage: Bool { get }
    /// How a value is written into the cache key. Default: `String(describing:)`.
    static func keyDescription(_ value: Value) -> String
}

extension CoderOptionKey {
    /// Options change the image unless they say otherwise.
    public static var changesImage: Bool { true }
    /// The value's description.
    public static func keyDescription(_ value: Value) -> String { String(describing: value) }
}

/// The options of custom coders carried by ``ImageDecodeOptions/coderOptions`` and
/// ``ImageEncodeOptions/coderOptions``: typed values keyed by ``CoderOptionKey`` types.
///
/// A value type; equal when the same options hold equal values. Built-in coders ignore options they don't know.
public struct CoderOptions: Hashable, Sendable {
    private struct Entry: Hashable, Sendable {
        let value: any Hashable & Sendable
        let changesImage: Bool
        let keyDescription: String

        static func == (lhs: Entry, rhs: Entry) -> Bool {
            AnyHashable(lhs.value) == AnyHashable(rhs.value) && lhs.changesImage == rhs.changesImage
        }

        func hash(into hasher: inout Hasher) { hasher.combine(AnyHashable(value)) }
    }

    private var entries: [String: Entry] = [:]

    /// No options.
    public init() {}

    /// True when no option is set.
    public var isEmpty: Bool { entries.isEmpty }

    /// The value of option `key`, or nil when unset.
    public subscript<Key: CoderOptionKey>(_ key: Key.Type) -> Key.Value? {
        get { entries[Key.name]?.value as? Key.Value }
        set {
            entries[Key.name] = newValue.map {
                Entry(value: $0, changesImage: Key.changesImage, keyDescription: Key.keyDescription($0))
            }
        }
    }

    /// The cache-key part of the options that change the image: `name=description` pairs sorted by name and
    /// joined by `,` (names and descriptions with `\`, `,` or `=` escaped); nil when there are none.
    var keyPart: String? {
        let parts = entries.filter(\.value.changesImage).sorted { $0.key < $1.key }.map { name, entry in
            "\(Self.escaped(name))=\(Self.escaped(entry.keyDescription))"
        }
        return parts.isEmpty ? nil : parts.joined(separator: ",")
    }

    /// These options without the ones that change the image: what decoding a finished product needs, whose pixels
    /// already carry the image-changing options (decoding them with those options again would apply them twice).
    var withoutImageChangingOptions: CoderOptions {
        var copy = self
        copy.entries = entries.filter { !$0.value.changesImage }
        return copy
    }

    private static func escaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "\\" || $0 == "," || $0 == "=" }) else { return text }
        var result = ""
        for character in text {
            if character == "\\" || character == "," || character == "=" { result.append("\\") }
            result.append(character)
        }
        return result
    }
}

extension ImageDecodeOptions {
    /// The value of the key's `decode(…)` part: what the decode options change beyond ImageCore's own parts —
    /// `color(srgb)` for ``convertToSRGB``, then `coder(name=value,…)` for custom coder options that change the
    /// image; nil when none applies. Injective: the coder part comes last and escapes its separators.
    var keyPart: String? {
        let coder = coderOptions.isEmpty ? nil : coderOptions.keyPart
        switch (convertToSRGB, coder) {
        case (false, nil): return nil
        case (true, nil): return "color(srgb)"
        case (false, let coder?): return "coder(\(coder))"
        case (true, let coder?): return "color(srgb),coder(\(coder))"
        }
    }
}

extension ImageContext {
    /// A custom coder's option for this load, stored in ``imageDecodeOptions`` (created with defaults if unset).
    public subscript<Key: CoderOptionKey>(coderOption key: Key.Type) -> Key.Value? {
        get { imageDecodeOptions?.coderOptions[key] }
        set {
            var options = imageDecodeOptions ?? ImageDecodeOptions()
            options.coderOptions[key] = newValue
            imageDecodeOptions = options
        }
    }
}
