extension ImageDecodeOptions {
    /// The stored options of ``ImageDecodeOptions``, one case each, with what each changes. `OptionCatalogTests`
    /// compares these cases with the struct's stored properties, so a new property without a case fails a test;
    /// ``traits`` and ``isDefault(in:)`` are exhaustive switches.
    public enum Field: String, CaseIterable, Sendable, CustomStringConvertible {
        case maxPixelCount, thumbnailPixelSize, preserveAspectRatio, allowsThumbnailUpscaling, scaleDownLimitBytes
        case firstFrameOnly, preloadAllFrames, applyOrientation, scaleFactor, animationBudget, coderOptions
        case convertToSRGB

        /// What the option changes.
        public var traits: OptionTraits {
            switch self {
            case .maxPixelCount: OptionTraits(.budget)
            case .thumbnailPixelSize, .preserveAspectRatio:
                OptionTraits(.pixels, key: .part("thumbnail"), appliesToDecodedImage: true)
            // The upscaled size counts against the pixel budget.
            case .allowsThumbnailUpscaling:
                OptionTraits([.pixels, .budget], key: .part("thumbnail"), appliesToDecodedImage: true)
            case .scaleDownLimitBytes: OptionTraits(.pixels, key: .bypass, appliesToDecodedImage: true)
            case .firstFrameOnly: OptionTraits(.pixels, key: .part("frames"), appliesToDecodedImage: true)
            case .preloadAllFrames: OptionTraits(.budget)
            case .applyOrientation: OptionTraits(.pixels, key: .part("orientation"))
            case .scaleFactor: .scheduling
            // Over a limit, `onExceeded: .firstFrameOnly` keeps the first frame: a variant, never stored under the key.
            case .animationBudget: OptionTraits([.budget, .pixels], key: .bypass, appliesToDecodedImage: true)
            // Per option: those that change the image are key parts (``CoderOptionKey/traits``).
            case .coderOptions: OptionTraits(.pixels, key: .part("decode"))
            // Converted from the file's own samples (a CMYK JPEG's, a deep HEIC's), which a decoded image no longer has.
            case .convertToSRGB: OptionTraits(.pixels, key: .part("decode"))
            }
        }

        /// True when `options` holds the default value of this field.
        public func isDefault(in options: ImageDecodeOptions) -> Bool {
            let standard = ImageDecodeOptions.standard
            return switch self {
            case .maxPixelCount: options.maxPixelCount == standard.maxPixelCount
            case .thumbnailPixelSize: options.thumbnailPixelSize == nil
            case .preserveAspectRatio: options.preserveAspectRatio == standard.preserveAspectRatio
            case .allowsThumbnailUpscaling: options.allowsThumbnailUpscaling == standard.allowsThumbnailUpscaling
            case .scaleDownLimitBytes: options.scaleDownLimitBytes == nil
            case .firstFrameOnly: options.firstFrameOnly == standard.firstFrameOnly
            case .preloadAllFrames: options.preloadAllFrames == standard.preloadAllFrames
            case .applyOrientation: options.applyOrientation == standard.applyOrientation
            case .scaleFactor: options.scaleFactor == standard.scaleFactor
            case .animationBudget: options.animationBudget == standard.animationBudget
            case .coderOptions: options.coderOptions.isEmpty
            case .convertToSRGB: options.convertToSRGB == standard.convertToSRGB
            }
        }

        /// The traits this field has in `options`: a field without effect there (aspect ratio or upscaling without
        /// a thumbnail size, coder options that change nothing, a budget that is not stricter) is
        /// ``OptionTraits/scheduling``.
        func effectiveTraits(in options: ImageDecodeOptions) -> OptionTraits {
            switch self {
            case .preserveAspectRatio, .allowsThumbnailUpscaling:
                return options.thumbnailPixelSize == nil ? .scheduling : traits
            case .coderOptions:
                return options.coderOptions.keyPart == nil ? .scheduling : traits
            case .maxPixelCount:
                return options.maxPixelCount >= ImageDecodeOptions.defaultMaxPixelCount ? .scheduling : traits
            case .animationBudget:
                let budget = options.animationBudget
                let defaults = AnimationBudget.default
                let looser =
                    budget.maxFrameCount >= defaults.maxFrameCount && budget.maxPixelCount >= defaults.maxPixelCount
                    && budget.maxWorkPixelCount >= defaults.maxWorkPixelCount
                if looser && budget.onExceeded == .fail { return .scheduling }
                return looser ? OptionTraits(.pixels, key: .bypass, appliesToDecodedImage: true) : traits
            default:
                return traits
            }
        }

        /// The field's name.
        public var description: String { rawValue }
    }

    /// The options a load decodes with when nothing changes them.
    static let standard = ImageDecodeOptions()

    /// The fields that differ from their defaults, each with the traits it has in these options.
    func activeFields() -> [(Field, OptionTraits)] {
        Field.allCases.compactMap { field in
            field.isDefault(in: self) ? nil : (field, field.effectiveTraits(in: self))
        }
    }
}

extension CoderOptionKey {
    /// What the option changes, from ``changesImage``: the decoded pixels (inside the coder, as a key part), or
    /// nothing but the decode's scheduling.
    public static var traits: OptionTraits {
        changesImage ? OptionTraits(.pixels, key: .part("decode")) : .scheduling
    }
}
