import Foundation

/// What a fetch starts from, and what it holds: the later steps follow from ``Content`` alone.
///
/// | content | decode with | transform | store |
/// |---|---|---|---|
/// | ``Content/originalBytes(_:)`` | the load's decode options | yes | original bytes + the product |
/// | ``Content/originalImage(_:)`` | — (already decoded) | yes | the product |
/// | ``Content/productBytes(_:)`` | product options (no thumbnail) | never | promote to memory |
///
/// `productBytes` is a derived key's own entry: the serializer's encoding of a finished product, so it is
/// never transformed again and never decoded at thumbnail size again.
struct FetchSource: Sendable {
    enum Content: Sendable {
        /// Bytes as the origin served them: a download, or the original key's cache entry.
        case originalBytes(Data)
        /// A decoded, untransformed original: a loader's own image (with the bytes it came with), or the original
        /// key's memory entry.
        case originalImage(Image, bytes: Data?)
        /// A derived key's own cache entry: the encoded product.
        case productBytes(Data)
    }

    /// Where the content came from.
    enum Origin: Sendable {
        /// The loader.
        case download
        /// The load's own key, in the given cache levels.
        case keyEntry(key: String, levels: ImageCacheType)
        /// The original key (the load's key is derived and missed), in the given cache levels.
        case originalEntry(key: String, levels: ImageCacheType)

        var isCache: Bool {
            if case .download = self { return false }
            return true
        }
    }

    var content: Content
    var origin: Origin
    var response: ResponseMetadata?
    /// The memory level the bytes came from also holds their decoded image (a hit whose image this load could not
    /// use), so the decode is not stored there again. False for a memory level's bytes alone: their decode is
    /// stored as the key's image, as a disk entry's is.
    var memoryHoldsImage = false

    /// The cache levels the content came from; `.none` for a download.
    var cacheType: ImageCacheType {
        switch origin {
        case .download: .none
        case .keyEntry(_, let levels), .originalEntry(_, let levels): levels
        }
    }

    /// The original bytes, when the source has them.
    var originalData: Data? {
        switch content {
        case .originalBytes(let data): data
        case .originalImage(_, let bytes): bytes
        case .productBytes: nil
        }
    }
}

/// A decode is shared by loads with equal decode options and coder.
struct DecodeKey: Hashable, Sendable {
    var options: ImageDecodeOptions
    /// The context's coder (instance identity for classes, type for values); nil for the manager's coders.
    var coder: ObjectIdentifier?

    init(options: ImageDecodeOptions, coder: (any ImageCoder)?) {
        self.options = options
        guard let coder else {
            self.coder = nil
            return
        }
        self.coder =
            type(of: coder) is AnyClass ? ObjectIdentifier(coder as AnyObject) : ObjectIdentifier(type(of: coder))
    }
}

/// A product (transform + store) is shared by loads with equal decode key, load options, cache key and store
/// settings.
struct ProductKey: Hashable, Sendable {
    var decode: DecodeKey
    /// The load's own decode options (a derived key's entry is decoded with product options, but what each load
    /// may take from it depends on these: first frame only, scale-down budget).
    var loadDecode: ImageDecodeOptions
    var cacheKey: String?
    var transformerKey: String?
    var transformAnimated: Bool
    /// The serializer that encodes the product's disk bytes.
    var serializer: StrategyIdentity
    /// The encode options that serializer uses (``ImageContextOption/imageEncodeOptions``: a
    /// ``OptionEffect/stored`` option, so loads share a product's store only when they are equal).
    var encodeOptions: ImageEncodeOptions?
    var storeCacheType: UInt8
    var originalStoreCacheType: UInt8
}

/// The finished product of a fetch: what is delivered, and what may be stored under the load's key.
struct FetchProduct: Sendable {
    /// The image delivered.
    var image: Image
    /// Bytes that decode to exactly `image`: the original bytes of an unchanged full decode, or a derived entry's
    /// own bytes; nil for thumbnails, transformed images and other variants.
    var data: Data?
    /// What the load's key means, to store under it; nil when the load made a variant (first frame only, scaled
    /// down, transform skipped for an animation) that must not be stored under the key.
    var canonical: Image?
    /// True when the image was decoded from bytes cut short (``ImageMetadata/isIncomplete``) and the manager keeps
    /// none of it: neither the product nor the source's bytes are stored.
    var keepsNothing = false
}
