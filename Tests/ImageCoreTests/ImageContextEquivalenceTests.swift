import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

extension ImageContextOption {
    fileprivate static let pluginA = ImageContextOption("com.example.pluginA")
    fileprivate static let pluginB = ImageContextOption("com.example.pluginB")
}

/// `ImageContext` keeps built-in keys in typed fields; these tests hold it to the semantics of the plain dictionary
/// it replaced (`ReferenceContext` below): random sequences of raw and typed writes, explicit nones, removals and
/// merges, with right- and wrong-typed values, must read back the same through every public accessor.
@Suite struct ImageContextEquivalenceTests {
    /// A key with a value of its accessor's type and the accessor itself.
    struct KeySpec: @unchecked Sendable {
        let key: ImageContextOption
        let value: any Sendable
        let get: (ImageContext) -> (any Sendable)?
        let set: (inout ImageContext, (any Sendable)?) -> Void
        let isOfType: (any Sendable) -> Bool
    }

    /// Every built-in key (the test fails if one is missing from the list: see `everyBuiltInKeyIsCovered`).
    static let specs: [KeySpec] = {
        let image = Image(pixels: PixelBuffer(width: 2, height: 2, layout: .rgba8))
        func spec<T: Sendable>(
            _ key: ImageContextOption, _ value: T, _ path: WritableKeyPath<ImageContext, T?>
        ) -> KeySpec {
            KeySpec(
                key: key, value: value, get: { $0[keyPath: path] },
                set: { context, value in context[keyPath: path] = value as? T }, isOfType: { $0 is T })
        }
        return [
            spec(.imageCache, RecordingCache() as any ImageCacheProtocol, \.imageCache),
            spec(.imageLoader, ScriptedLoader() as any ImageLoader, \.imageLoader),
            spec(.imageCoder, TestCoder() as any ImageCoder, \.imageCoder),
            spec(.imageTransformer, TestTransformer(width: 3, height: 3) as any Transformer, \.imageTransformer),
            spec(.cacheKeyFilter, BlockCacheKeyFilter { $0.path } as any CacheKeyFilter, \.cacheKeyFilter),
            spec(
                .cacheSerializer, BlockCacheSerializer { _, data, _ in data } as any CacheSerializer, \.cacheSerializer),
            spec(.callbackQueue, CallbackQueue.current, \.callbackQueue),
            spec(.imageScaleFactor, 2.0, \.imageScaleFactor),
            spec(.imagePreserveAspectRatio, false, \.imagePreserveAspectRatio),
            spec(.imageThumbnailPixelSize, PixelSize(width: 5, height: 6), \.imageThumbnailPixelSize),
            spec(.imageScaleDownLimitBytes, 4096, \.imageScaleDownLimitBytes),
            spec(.imageDecodeOptions, ImageDecodeOptions(maxPixelCount: 77), \.imageDecodeOptions),
            spec(.imageEncodeOptions, ImageEncodeOptions(quality: 0.5), \.imageEncodeOptions),
            spec(.queryCacheType, ImageCacheType.memory, \.queryCacheType),
            spec(.storeCacheType, ImageCacheType.disk, \.storeCacheType),
            spec(.originalQueryCacheType, ImageCacheType.all, \.originalQueryCacheType),
            spec(.originalStoreCacheType, ImageCacheType.none, \.originalStoreCacheType),
            spec(.originalImageCache, RecordingCache() as any ImageCacheProtocol, \.originalImageCache),
            spec(
                .downloadRequestModifier, BlockRequestModifier { $0 } as any RequestModifier, \.downloadRequestModifier),
            spec(
                .downloadResponseModifier, BlockResponseModifier { $0 } as any ResponseModifier,
                \.downloadResponseModifier),
            spec(
                .downloadDecryptor, BlockDownloadDecryptor { data, _ in data } as any DownloadDecryptor,
                \.downloadDecryptor),
            spec(.loaderCachedImage, image, \.loaderCachedImage),
            spec(.loaderCachedMetadata, CacheEntryMetadata(etag: "\"e\""), \.loaderCachedMetadata),
            spec(.setImageOperationKey, "operation", \.setImageOperationKey),
            spec(.downloadHeaderCheck, DownloadHeaderCheck { _ in .accept }, \.downloadHeaderCheck),
            spec(.cachePartitionKey, "tenant-7", \.cachePartitionKey),
            spec(.loadTimeout, 2.5, \.loadTimeout),
        ]
    }()

    /// A value of no built-in key's type.
    struct WrongType: Sendable, Equatable { let id = 4242 }
    static let wrongValue: any Sendable = WrongType()

    @Test func everyBuiltInKeyIsCovered() {
        #expect(Set(Self.specs.map(\.key.rawValue)) == Set(ContextSlot.allCases.map(\.name)))
        #expect(Self.specs.allSatisfy { $0.key.slot != nil })
        #expect(ImageContextOption.pluginA.slot == nil)
    }

    /// A dictionary literal keeps `5` an `Int`: a numeric key that took only its accessor's type would hold it as
    /// a value of another type, and the load would run without the timeout its caller wrote.
    @Test func numericKeysTakeAnyNumberThatConvertsExactly() {
        let seconds: [any Sendable] = [5, 5.0, Float(5), Int32(5), UInt8(5)]
        for value in seconds {
            let context = ImageContext([.loadTimeout: value, .imageScaleFactor: value])
            #expect(context.loadTimeout == 5 && context.imageScaleFactor == 5, "\(type(of: value))")
        }
        #expect(ImageContext([.loadTimeout: 0.25]).loadTimeout == 0.25)
        for value in [4_000_000, 4e6, Float(4e6), Int64(4_000_000)] as [any Sendable] {
            #expect(ImageContext([.imageScaleDownLimitBytes: value]).imageScaleDownLimitBytes == 4_000_000)
        }
        // What does not convert exactly stays a value of another type, as any other key's would.
        for value in [4.5, Double.nan, UInt64.max] as [any Sendable] {
            let context = ImageContext([.imageScaleDownLimitBytes: value])
            #expect(context.imageScaleDownLimitBytes == nil && context[.imageScaleDownLimitBytes] != nil)
        }
        #expect(ImageContext([.loadTimeout: "5"]).loadTimeout == nil)
    }

    @Test func aBuiltInKeySetWithTheWrongTypeReadsBackRawButNotTyped() throws {
        for spec in Self.specs {
            var context = ImageContext()
            context[spec.key] = Self.wrongValue
            #expect(context[spec.key] as? WrongType == WrongType(), "\(spec.key)")
            #expect(context.value(spec.key, as: WrongType.self) == WrongType(), "\(spec.key)")
            #expect(spec.get(context) == nil, "\(spec.key)")
            #expect(context.contains(spec.key) && !context.isExplicitNone(spec.key), "\(spec.key)")
            #expect(context.keys.contains(spec.key), "\(spec.key)")
            // The raw setter with the right type makes it typed again.
            context[spec.key] = spec.value
            #expect(same(spec.get(context), spec.value), "\(spec.key)")
            #expect(context.value(spec.key, as: WrongType.self) == nil, "\(spec.key)")
        }
    }

    @Test func rawAndTypedWritesReadBackTheSameThroughEveryAccessor() {
        for spec in Self.specs {
            var raw = ImageContext()
            raw[spec.key] = spec.value
            var typed = ImageContext()
            spec.set(&typed, spec.value)
            for context in [raw, typed] {
                #expect(same(context[spec.key], spec.value), "\(spec.key)")
                #expect(same(spec.get(context), spec.value), "\(spec.key)")
                #expect(context.contains(spec.key), "\(spec.key)")
                #expect(Set(context.keys) == [spec.key], "\(spec.key)")
            }
            typed.setExplicitNone(spec.key)
            #expect(typed[spec.key] == nil && spec.get(typed) == nil && typed.isExplicitNone(spec.key))
            spec.set(&typed, nil)
            #expect(!typed.contains(spec.key), "a typed nil removes the explicit none too (\(spec.key))")
        }
    }

    @Test func randomOperationSequencesMatchTheDictionarySemantics() {
        var generator = SplitMix64(seed: 0x5EED_C0DE)
        for _ in 0..<300 {
            var context = ImageContext()
            var reference = ReferenceContext()
            var other = ImageContext()
            var otherReference = ReferenceContext()
            for _ in 0..<Int(generator.next() % 12) {
                Self.randomOperation(on: &context, &reference, using: &generator)
                Self.randomOperation(on: &other, &otherReference, using: &generator)
                if let mismatch = Self.mismatch(context, reference) {
                    Issue.record("after an operation: \(mismatch)")
                    return
                }
            }
            // A copy is independent of later writes to the original (copy-on-write).
            let snapshot = context
            let snapshotReference = reference
            Self.randomOperation(on: &context, &reference, using: &generator)
            if let mismatch = Self.mismatch(snapshot, snapshotReference) {
                Issue.record("a copy changed with its original: \(mismatch)")
                return
            }
            if let mismatch = Self.mismatch(
                context.merging(defaults: other), reference.merging(defaults: otherReference))
            {
                Issue.record("after merging: \(mismatch)")
                return
            }
        }
    }

    /// The manager's transformer, filter and serializer are layered under a load's context instead of copied in;
    /// the layered context must read (and after any write, behave) like the merged one.
    @Test func layeredManagerDefaultsBehaveLikeMergedOnes() {
        let transformer = TestTransformer(width: 9, height: 9)
        let filter = BlockCacheKeyFilter { $0.lastPathComponent }
        let serializer = BlockCacheSerializer { _, data, _ in data }
        let defaults = ContextDefaults(
            transformer: transformer, transformerKey: transformer.transformerKey, cacheKeyFilter: filter,
            cacheSerializer: serializer)
        var asContext = ImageContext()
        asContext.imageTransformer = transformer
        asContext.cacheKeyFilter = filter
        asContext.cacheSerializer = serializer
        var generator = SplitMix64(seed: 0xDEFA_0175)
        for _ in 0..<300 {
            var context = ImageContext()
            var reference = ReferenceContext()
            for _ in 0..<Int(generator.next() % 6) {
                Self.randomOperation(on: &context, &reference, using: &generator)
            }
            var layered = context.layering(defaults)
            let merged = context.merging(defaults: asContext)
            if let mismatch = Self.mismatch(layered, merged) {
                Issue.record("layered vs merged: \(mismatch)")
                return
            }
            #expect(layered.imageTransformerKey == merged.imageTransformer?.transformerKey)
            var mergedReference = Self.reference(of: merged)
            Self.randomOperation(on: &layered, &mergedReference, using: &generator)
            if let mismatch = Self.mismatch(layered, mergedReference) {
                Issue.record("layered after a write: \(mismatch)")
                return
            }
        }
    }

    // MARK: Helpers

    static func randomOperation(
        on context: inout ImageContext, _ reference: inout ReferenceContext, using generator: inout SplitMix64
    ) {
        let index = Int(generator.next() % UInt64(specs.count + 2))
        let key = index < specs.count ? specs[index].key : (index == specs.count ? .pluginA : .pluginB)
        let right: any Sendable = index < specs.count ? specs[index].value : "plugin-\(index)"
        switch generator.next() % 7 {
        case 0, 1:
            context[key] = right
            reference[key] = right
        case 2:
            context[key] = wrongValue
            reference[key] = wrongValue
        case 3:
            context[key] = nil
            reference[key] = nil
        case 4:
            context.setExplicitNone(key)
            reference.setExplicitNone(key)
        case 5:
            context.removeValue(forKey: key)
            reference[key] = nil
        default:
            // The typed setter (plugin keys: the raw one).
            if index < specs.count {
                specs[index].set(&context, right)
            } else {
                context[key] = right
            }
            reference[key] = right
        }
    }

    static func reference(of context: ImageContext) -> ReferenceContext {
        var reference = ReferenceContext()
        for key in context.keys {
            if context.isExplicitNone(key) {
                reference.setExplicitNone(key)
            } else {
                reference[key] = context[key]
            }
        }
        return reference
    }

    static func allKeys() -> [ImageContextOption] { specs.map(\.key) + [.pluginA, .pluginB] }

    /// The first accessor on which `context` and `reference` disagree.
    static func mismatch(_ context: ImageContext, _ reference: ReferenceContext) -> String? {
        if Set(context.keys) != Set(reference.entries.keys) {
            return "keys \(context.keys) vs \(reference.entries.keys)"
        }
        for key in allKeys() {
            if context.contains(key) != (reference.entries[key] != nil) { return "contains(\(key))" }
            if context.isExplicitNone(key) != reference.isExplicitNone(key) { return "isExplicitNone(\(key))" }
            if !same(context[key], reference[key]) { return "subscript(\(key))" }
            if context.value(key, as: WrongType.self) != reference[key] as? WrongType {
                return "value(\(key), as: WrongType)"
            }
            if let spec = specs.first(where: { $0.key == key }) {
                let expected = reference[key].flatMap { spec.isOfType($0) ? $0 : nil }
                if !same(spec.get(context), expected) { return "typed \(key)" }
            }
        }
        return nil
    }

    static func mismatch(_ context: ImageContext, _ other: ImageContext) -> String? {
        mismatch(context, reference(of: other))
    }
}

/// The semantics `ImageContext` had as a plain dictionary with an explicit-none marker.
struct ReferenceContext {
    enum Entry { case value(any Sendable), explicitNone }
    var entries: [ImageContextOption: Entry] = [:]

    subscript(key: ImageContextOption) -> (any Sendable)? {
        get {
            if case .value(let value)? = entries[key] { return value }
            return nil
        }
        set { entries[key] = newValue.map { .value($0) } }
    }

    func isExplicitNone(_ key: ImageContextOption) -> Bool {
        if case .explicitNone? = entries[key] { return true }
        return false
    }

    mutating func setExplicitNone(_ key: ImageContextOption) { entries[key] = .explicitNone }

    func merging(defaults other: ReferenceContext) -> ReferenceContext {
        var merged = self
        for (key, entry) in other.entries where entries[key] == nil { merged.entries[key] = entry }
        return merged
    }
}

/// Same value: the same object for classes, the same type and description for values (each test value is unique
/// in its type, so that tells them apart).
func same(_ lhs: (any Sendable)?, _ rhs: (any Sendable)?) -> Bool {
    switch (lhs, rhs) {
    case (nil, nil): return true
    case (let lhs?, let rhs?):
        if type(of: lhs as Any) is AnyClass || type(of: rhs as Any) is AnyClass {
            return (lhs as AnyObject) === (rhs as AnyObject)
        }
        return type(of: lhs as Any) == type(of: rhs as Any) && String(reflecting: lhs) == String(reflecting: rhs)
    default: return false
    }
}
