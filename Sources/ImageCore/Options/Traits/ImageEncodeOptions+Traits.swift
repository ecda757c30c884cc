extension ImageEncodeOptions {
    /// The stored options of ``ImageEncodeOptions``, one case each. They reach a load through
    /// ``ImageContextOption/imageEncodeOptions`` and change the bytes a serializer writes for a derived key (and
    /// nothing a load delivers the first time). `OptionCatalogTests` compares these cases with the struct's stored
    /// properties, so a new property without a case fails a test.
    public enum Field: String, CaseIterable, Sendable, CustomStringConvertible {
        case quality, effort, lossless, progressive, chromaSubsampling, maxPixelSize, maxFileSize, firstFrameOnly
        case backgroundColor, coderOptions

        /// What the option changes: the stored bytes of a derived entry.
        public var traits: OptionTraits {
            switch self {
            case .quality, .effort, .lossless, .progressive, .chromaSubsampling, .maxPixelSize, .maxFileSize,
                .firstFrameOnly, .backgroundColor, .coderOptions:
                OptionTraits(.stored)
            }
        }

        /// The field's name.
        public var description: String { rawValue }
    }
}
