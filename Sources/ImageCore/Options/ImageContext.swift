/// A key of ``ImageContext``; extensible, so plugins add their own keys.
///
/// ```swift
/// extension ImageContextOption { static let myFlag = ImageContextOption("com.example.myFlag") }
/// ```
public struct ImageContextOption: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The key's unique name; prefix plugin keys with a reverse-DNS name.
    public let rawValue: String
    /// The typed field of a built-in key; nil for plugin keys. Follows from `rawValue` alone.
    let slot: ContextSlot?

    /// Creates a key.
    public init(rawValue: String) {
        self.rawValue = rawValue
        self.slot = ContextSlot(name: rawValue)
    }

    /// Creates a key.
    public init(_ rawValue: String) { self.init(rawValue: rawValue) }

    /// The name.
    public var description: String { rawValue }

    /// Keys are equal when their names are.
    public static func == (lhs: ImageContextOption, rhs: ImageContextOption) -> Bool { lhs.rawValue == rhs.rawValue }

    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}

/// Per-load settings that are not flags: strategy objects, sizes, queues; SDWebImage's `SDWebImageContext`.
///
/// A value type keyed by ``ImageContextOption``. The built-in keys have typed accessors (see
/// `ImageContext+Keys.swift`) backed by stored fields, so reading one costs a field read; plugin keys live in a
/// dictionary of `any Sendable` values. A key can hold an *explicit none* (``setExplicitNone(_:)``) that means
/// "no value, and do not fill in the manager's default" — how a request turns off the manager's transformer.
///
/// A built-in key set through the subscript with a value of another type than its accessor's is kept as given:
/// the subscript returns it, the typed accessor returns nil. Numbers are the exception: a numeric key takes any
/// integer or floating-point value that converts exactly (`[.loadTimeout: 5]` is 5 seconds, though the literal is
/// an `Int`), and holds it as its accessor's type.
///
/// Copying a context is cheap (one reference); the first change to a shared copy copies its storage.
public struct ImageContext: Sendable {
    /// Copy-on-write storage; see ``ContextStorage``.
    private(set) var storage: ContextStorage
    /// The manager's defaults for keys this context has no entry for (see ``layering(_:)``).
    private(set) var defaults: ContextDefaults?

    /// An empty context.
    public init() { storage = .empty }

    /// Creates a context from raw values.
    public init(_ values: [ImageContextOption: any Sendable]) {
        storage = .empty
        for (key, value) in values { self[key] = value }
    }

    /// The raw value for `key`; nil when absent or explicitly none.
    public subscript(key: ImageContextOption) -> (any Sendable)? {
        get {
            guard let slot = key.slot else {
                return storage.cold?.others[key]
            }
            let bit = slot.bit
            if storage.present & bit == 0 { return defaults?.boxedValue(slot) }
            if storage.foreign & bit != 0 { return storage.cold?.others[key] }
            return storage.boxedValue(slot)
        }
        set {
            let storage = uniqueStorage()
            guard let slot = key.slot else {
                if newValue != nil || storage.cold != nil {
                    storage.coldFields.others[key] = newValue
                    storage.coldFields.pluginNones.remove(key)
                }
                return
            }
            if storage.assign(slot, newValue) {
                storage.didWrite(slot, newValue == nil ? .removed : .value)
            } else {
                _ = storage.assign(slot, nil)
                storage.didWrite(slot, .foreign)
                storage.coldFields.others[key] = newValue
            }
        }
    }

    /// Reads `key` as `T`; nil when absent, explicitly none, or of another type.
    ///
    /// Prefer the typed accessors for built-in keys: they read a field, this casts.
    public func value<T>(_ key: ImageContextOption, as type: T.Type = T.self) -> T? {
        guard let value = self[key] else { return nil }
        return value as? T
    }

    /// True when `key` holds a value or an explicit none.
    public func contains(_ key: ImageContextOption) -> Bool {
        guard let slot = key.slot else {
            guard let cold = storage.cold else { return false }
            return cold.others[key] != nil || cold.pluginNones.contains(key)
        }
        return (storage.present | (defaults?.values ?? 0)) & slot.bit != 0
    }

    /// True when `key` holds an explicit none.
    public func isExplicitNone(_ key: ImageContextOption) -> Bool {
        guard let slot = key.slot else { return storage.cold?.pluginNones.contains(key) ?? false }
        return storage.explicitNone & slot.bit != 0
    }

    /// Marks `key` as deliberately empty so the manager does not fill in its default.
    public mutating func setExplicitNone(_ key: ImageContextOption) {
        let storage = uniqueStorage()
        guard let slot = key.slot else {
            storage.coldFields.others.removeValue(forKey: key)
            storage.coldFields.pluginNones.insert(key)
            return
        }
        _ = storage.assign(slot, nil)
        storage.didWrite(slot, .explicitNone)
    }

    /// Removes `key` (value or explicit none).
    public mutating func removeValue(forKey key: ImageContextOption) { self[key] = nil }

    /// The keys present, values and explicit nones alike.
    public var keys: Dictionary<ImageContextOption, any Sendable>.Keys { entries().keys }

    /// Returns a context with `other`'s entries added where this one has none.
    public func merging(defaults other: ImageContext) -> ImageContext {
        var merged = self
        for (key, value) in other.entries() where !merged.contains(key) {
            if value is ExplicitNone { merged.setExplicitNone(key) } else { merged[key] = value }
        }
        return merged
    }

    /// Marker for a deliberately empty key in ``entries()``.
    struct ExplicitNone: Sendable {}

    /// Every entry, with explicit nones as ``ExplicitNone`` (the layered defaults included).
    private func entries() -> [ImageContextOption: any Sendable] {
        var all = storage.others
        for key in storage.pluginNones { all[key] = ExplicitNone() }
        for slot in ContextSlot.allCases {
            let bit = slot.bit
            if storage.present & bit != 0 {
                if storage.explicitNone & bit != 0 {
                    all[slot.option] = ExplicitNone()
                } else if storage.foreign & bit == 0, let value = storage.boxedValue(slot) {
                    all[slot.option] = value
                }
            } else if let value = defaults?.boxedValue(slot) {
                all[slot.option] = value
            }
        }
        return all
    }

    // MARK: Storage

    /// The storage, made unshared and with the layered defaults written into it, ready to be changed.
    private mutating func uniqueStorage() -> ContextStorage {
        if !isKnownUniquelyReferenced(&storage) {
            storage = storage === ContextStorage.empty ? ContextStorage() : storage.copy()
        }
        if let defaults {
            self.defaults = nil
            let absent = ~storage.present
            if absent & ContextSlot.imageTransformer.bit != 0, let transformer = defaults.transformer {
                storage.imageTransformer = transformer
                storage.imageTransformerKey = defaults.transformerKey
                storage.present |= ContextSlot.imageTransformer.bit
                storage.values |= ContextSlot.imageTransformer.bit
            }
            if absent & ContextSlot.cacheKeyFilter.bit != 0, let filter = defaults.cacheKeyFilter {
                storage.cacheKeyFilter = filter
                storage.present |= ContextSlot.cacheKeyFilter.bit
                storage.values |= ContextSlot.cacheKeyFilter.bit
            }
            if absent & ContextSlot.cacheSerializer.bit != 0, let serializer = defaults.cacheSerializer {
                storage.coldFields.cacheSerializer = serializer
                storage.present |= ContextSlot.cacheSerializer.bit
                storage.values |= ContextSlot.cacheSerializer.bit
            }
        }
        return storage
    }

    /// Runs `write` on unshared storage, then records whether `slot` now holds a value.
    mutating func update(_ slot: ContextSlot, hasValue: Bool, _ write: (ContextStorage) -> Void) {
        let storage = uniqueStorage()
        write(storage)
        storage.didWrite(slot, hasValue ? .value : .removed)
    }

    /// True when this context has an entry (value or explicit none) for `slot`, not counting layered defaults.
    func hasOwnEntry(_ slot: ContextSlot) -> Bool { storage.present & slot.bit != 0 }

    /// True when any of `slots` (a mask of ``ContextSlot/bit``s) holds an entry of this context's own; the layered
    /// defaults (transformer, filter, serializer) are not counted.
    @inline(__always)
    func hasOwnEntry(in slots: UInt32) -> Bool { storage.present & slots != 0 }

    /// True when `slot`'s typed accessor returns a value (layered defaults included), without copying it out.
    @inline(__always)
    func hasValue(_ slot: ContextSlot) -> Bool {
        let bit = slot.bit
        if storage.values & bit != 0 { return true }
        guard let defaults, storage.present & bit == 0 else { return false }
        return defaults.values & bit != 0
    }

    /// This context with the manager's `defaults` under it: each default shows where this context has no entry
    /// for its key, as if ``merging(defaults:)`` had copied it in, without copying or allocating. The first
    /// change to the result writes the defaults into its own storage.
    func layering(_ defaults: ContextDefaults?) -> ImageContext {
        var layered = self
        layered.layer(defaults)
        return layered
    }

    /// Puts the manager's `defaults` under this context, in place; see ``layering(_:)``.
    mutating func layer(_ defaults: ContextDefaults?) {
        guard let defaults, !defaults.isEmpty else { return }
        if self.defaults != nil { _ = uniqueStorage() }
        self.defaults = defaults
    }
}
