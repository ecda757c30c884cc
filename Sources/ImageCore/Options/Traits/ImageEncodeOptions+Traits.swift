import Foundation

extension ImageEncodeOptions {
    /// The stored options of ``ImageEncodeOptions``, one case each. They reach a load through
    /// ``ImageContextOption/imageEncodeOptions`` and change the bytes a serializer writes for a derived key — what a
    /// later load reads back — so a load that names encode options gets a key part of them (`encode(…)`): entries
    /// written at another quality are never read back under its key. `OptionCatalogTests` compares these cases with
    /// the struct's stored properties, so a new property without a case fails a test; `keyValue(in:)` is an
    /// exhaustive switch.
    public enum Field: String, CaseIterable, Sendable, CustomStringConvertible {
        case quality, effort, lossless, progressive, chromaSubsampling, maxPixelSize, maxFileSize, perceptualTarget
        case firstFrameOnly, backgroundColor, coderOptions

        /// What the option changes: the stored bytes of a derived entry, keyed.
        public var traits: OptionTraits { OptionTraits(.stored, key: .part("encode")) }

        /// The field's value in `options` as the key writes it (deterministic across processes: fixed decimals).
        func keyValue(in options: ImageEncodeOptions) -> String {
            switch self {
            case .quality: String(format: "%.3f", options.quality)
            case .effort:
                switch options.effort {
                case .fast: "fast"
                case .balanced: "balanced"
                case .best: "best"
                }
            case .lossless: options.lossless ? "1" : "0"
            case .progressive: options.progressive ? "1" : "0"
            case .chromaSubsampling:
                switch options.chromaSubsampling {
                case nil: "auto"
                case .s444?: "444"
                case .s422?: "422"
                case .s420?: "420"
                case .gray?: "gray"
                }
            case .maxPixelSize: options.maxPixelSize.map { "\($0.width)x\($0.height)" } ?? "-"
            case .maxFileSize: options.maxFileSize.map(String.init) ?? "-"
            // The registered metric decides what the target means, so its name is part of the value.
            case .perceptualTarget:
                options.perceptualTarget.map { "\(PerceptualQuality.metric?.name ?? "none"):\($0.keyDescription)" }
                    ?? "-"
            case .firstFrameOnly: options.firstFrameOnly ? "1" : "0"
            case .backgroundColor:
                "\(options.backgroundColor.red).\(options.backgroundColor.green).\(options.backgroundColor.blue)."
                    + "\(options.backgroundColor.alpha)"
            case .coderOptions: options.coderOptions.keyPart ?? "-"
            }
        }

        /// The field's name.
        public var description: String { rawValue }
    }

    /// The cache-key part of these options: every field, `name=value`, in the order of ``Field``.
    var keyPart: String {
        Field.allCases.map { "\($0.rawValue)=\($0.keyValue(in: self))" }.joined(separator: ",")
    }
}
