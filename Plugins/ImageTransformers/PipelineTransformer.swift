import ImageCore

/// Applies several transformers in order, as one transformer with one cache key.
///
/// Each part receives the previous part's result; the first error stops the pipeline and is rethrown. The key
/// joins the parts' keys with `|` in order (`resize(256x256,aspectFill,lanczos3)|roundCorners(r=16.00,all)`), so
/// order matters and equal pipelines give equal keys. An empty pipeline returns the image unchanged (marked
/// transformed) with the key `pipeline()`. Thread-safe when its parts are (every ``/ImageCore/Transformer`` must be).
public struct PipelineTransformer: Transformer {
    /// The parts, applied first to last.
    public let transformers: [any Transformer]

    /// Creates a pipeline of `transformers`, applied in array order.
    public init(_ transformers: [any Transformer]) {
        self.transformers = transformers
    }

    /// Creates a pipeline from a variadic list.
    public init(_ transformers: any Transformer...) {
        self.init(transformers)
    }

    /// The parts' keys joined with `|`, or `pipeline()` when empty.
    public var transformerKey: String {
        transformers.isEmpty ? "pipeline()" : transformers.map(\.transformerKey).joined(separator: "|")
    }

    /// Runs every part in order.
    ///
    /// - Parameters:
    ///   - image: the input of the first part; each part's output is the next one's input.
    ///   - key: passed unchanged to every part.
    /// - Throws: the first part's error.
    public func transform(_ image: Image, forKey key: String) throws -> Image {
        guard !transformers.isEmpty else {
            var metadata = image.metadata
            metadata.isTransformed = true
            return image.with(metadata: metadata)
        }
        var current = image
        for transformer in transformers {
            current = try transformer.transform(current, forKey: key)
        }
        return current
    }
}
