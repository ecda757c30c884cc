/// A key of ``ImageContext``; extensible, so plugins add their own keys.
///
/// ```swift
/// extension ImageContextOption { static let myFlag = ImageContextOption("com.example.myFlag") }
/// ```
public struct ImageContextOption: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The key's unique name; prefix plugin keys with a reverse-DNS name.
    public let rawValue: String
    /// Creates a key.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a key.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// The name.
    public var description: String { rawValue }
}

/// Per-load settings that are not flags: strategy objects, sizes, queues; SDWebImage's `SDWebImageContext`.
///
/// A value type: a dictionary of `any Sendable` values keyed by ``ImageContextOption``, with typed accessors for
/// the built-in keys (see `ImageContext+Keys.swift`). A key can hold an *explicit none* (``setExplicitNone(_:)``)
/// that means "no value, and do not fill in the manager's default" — how a request turns off the manager's
/// transformer.
public struct ImageContext: Sendable {
    private var storage: [ImageContextOption: any Sendable]

    /// An empty context.
    public init() { storage = [:] }

    /// Creates a context from raw values.
    public init(_ values: [ImageContextOption: any Sendable]) { storage = values }

    /// The raw value for `key`; nil when absent or explicitly none.
    public subscript(key: ImageContextOption) -> (any Sendable)? {
        get {
            // Most loads carry an empty context: skip hashing the key.
            guard !storage.isEmpty, let value = storage[key], !(value is ExplicitNone) else { return nil }
            return value
        }
        set { storage[key] = newValue }
    }

    /// Reads `key` as `T`; nil when absent, explicitly none, or of another type.
    public func value<T>(_ key: ImageContextOption, as type: T.Type = T.self) -> T? {
        self[key] as? T
    }

    /// True when `key` holds a value or an explicit none.
    public func contains(_ key: ImageContextOption) -> Bool { !storage.isEmpty && storage[key] != nil }

    /// True when `key` holds an explicit none.
    public func isExplicitNone(_ key: ImageContextOption) -> Bool { storage[key] is ExplicitNone }

    /// Marks `key` as deliberately empty so the manager does not fill in its default.
    public mutating func setExplicitNone(_ key: ImageContextOption) { storage[key] = ExplicitNone() }

    /// Removes `key` (value or explicit none).
    public mutating func removeValue(forKey key: ImageContextOption) { storage.removeValue(forKey: key) }

    /// The keys present, values and explicit nones alike.
    public var keys: Dictionary<ImageContextOption, any Sendable>.Keys { storage.keys }

    /// Returns a context with `other`'s entries added where this one has none.
    public func merging(defaults other: ImageContext) -> ImageContext {
        var merged = self
        for (key, value) in other.storage where storage[key] == nil { merged.storage[key] = value }
        return merged
    }

    /// Marker for a deliberately empty key.
    struct ExplicitNone: Sendable {}
}
