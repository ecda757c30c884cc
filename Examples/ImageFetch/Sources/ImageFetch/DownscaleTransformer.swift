import WebImage

/// Shrinks images larger than `maxSize` to fit inside it (aspect ratio kept); smaller images pass unchanged.
///
/// `ResizeTransformer` scales up as well as down; a download tool should never enlarge, so it is wrapped here.
/// The key differs from the plain resize key so the two never share a cache entry.
struct DownscaleTransformer: Transformer {
    let resize: ResizeTransformer

    init(maxSize: PixelSize) { resize = ResizeTransformer(size: maxSize, mode: .aspectFit) }

    var transformerKey: String { "downscale-\(resize.transformerKey)" }

    func transform(_ image: Image, forKey key: String) throws -> Image {
        guard image.width > resize.size.width || image.height > resize.size.height else { return image }
        return try resize.transform(image, forKey: key)
    }
}
