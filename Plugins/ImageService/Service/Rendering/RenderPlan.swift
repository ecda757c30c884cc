import ImageCore
import ImageServiceQuery

/// The geometry of one thumbnail, as pure arithmetic: what size to decode at, then which window to cut and what
/// size to scale it to.
///
/// Decoding shrinks on load (JPEG's DCT scaling, libwebp's scaler), so the decode is asked for the smallest size
/// the fit still needs and the exact step afterwards works on few pixels:
/// - ``Fit/contain``: the box itself; the decoder fits the image inside it (in the upright orientation).
/// - ``Fit/fill``: the box, aspect ratio not kept.
/// - ``Fit/cover``: a square whose side covers the box in either orientation of the source, from its stored size
///   (the probe knows the size, not the EXIF orientation): `max(bw, bh) × max(W/H, H/W)`.
/// - ``Fit/crop``: full size (a crop does not scale).
///
/// Nothing is scaled up unless the options say `enlarge`. Value type; thread-safe.
struct RenderPlan: Sendable, Equatable {
    /// A rectangle in pixels.
    struct Rect: Sendable, Equatable {
        var x: Int
        var y: Int
        var width: Int
        var height: Int
    }

    /// The decode's thumbnail size (nil: full size) and whether it keeps the aspect ratio.
    static func decodeTarget(
        fit: Fit, box: PixelSize, storedSize: PixelSize?
    ) -> (size: PixelSize?, preserveAspectRatio: Bool) {
        switch fit {
        case .contain: return (box, true)
        case .fill: return (box, false)
        case .crop: return (nil, true)
        case .cover:
            guard let stored = storedSize, stored.width > 0, stored.height > 0 else { return (nil, true) }
            let ratio = max(
                Double(stored.width) / Double(stored.height), Double(stored.height) / Double(stored.width))
            let side = Double(max(box.width, box.height)) * ratio
            guard side.isFinite, side < Double(Int32.max) else { return (nil, true) }
            let square = Int(side.rounded(.up))
            return (PixelSize(width: square, height: square), true)
        }
    }

    /// The window of the decoded image that becomes the thumbnail (nil: all of it).
    let crop: Rect?
    /// The thumbnail's size.
    let output: PixelSize

    /// Plans the exact step for an image decoded at `decoded` (upright), whose source was `source` (upright).
    ///
    /// - Parameter smartOrigin: for ``Gravity/smart``, where the busiest window of the decoded image is, as the
    ///   window's top-left corner; computed by the caller from the pixels (``SmartCrop``).
    init(
        fit: Fit, box: PixelSize, gravity: Gravity, enlarge: Bool, decoded: PixelSize, source: PixelSize,
        smartOrigin: ((_ window: PixelSize) -> (x: Int, y: Int))? = nil
    ) {
        let (w, h) = (Double(decoded.width), Double(decoded.height))
        let (bw, bh) = (Double(box.width), Double(box.height))
        switch fit {
        case .contain:
            let scale = min(Double(box.width) / Double(source.width), Double(box.height) / Double(source.height))
            if scale >= 1 && !enlarge {
                output = source
            } else {
                output = PixelSize(
                    width: max(1, Int((Double(source.width) * scale).rounded())),
                    height: max(1, Int((Double(source.height) * scale).rounded())))
            }
            crop = nil
        case .fill:
            output =
                enlarge
                ? box : PixelSize(width: min(box.width, source.width), height: min(box.height, source.height))
            crop = nil
        case .cover:
            // The scale from the decoded image to the box; without enlarge the box shrinks (keeping its aspect
            // ratio) until it fits in the source at 1:1.
            var scale = max(bw / w, bh / h)
            let sourceScale = max(bw / Double(source.width), bh / Double(source.height))
            var outputSize = box
            if sourceScale > 1 && !enlarge {
                outputSize = PixelSize(
                    width: max(1, Int((bw / sourceScale).rounded())), height: max(1, Int((bh / sourceScale).rounded())))
                scale = max(Double(outputSize.width) / w, Double(outputSize.height) / h)
            }
            let window = PixelSize(
                width: min(decoded.width, max(1, Int((Double(outputSize.width) / scale).rounded()))),
                height: min(decoded.height, max(1, Int((Double(outputSize.height) / scale).rounded()))))
            output = outputSize
            crop = Self.place(window, in: decoded, gravity: gravity, smartOrigin: smartOrigin)
        case .crop:
            let window = PixelSize(width: min(box.width, decoded.width), height: min(box.height, decoded.height))
            output = window
            crop = Self.place(window, in: decoded, gravity: gravity, smartOrigin: smartOrigin)
        }
    }

    /// Where a `window` goes inside `size` for `gravity`, clamped inside; nil when it is the whole image.
    static func place(
        _ window: PixelSize, in size: PixelSize, gravity: Gravity,
        smartOrigin: ((_ window: PixelSize) -> (x: Int, y: Int))?
    ) -> Rect? {
        if window == size { return nil }
        let freeX = size.width - window.width
        let freeY = size.height - window.height
        let origin: (x: Int, y: Int)
        switch gravity {
        case .center:
            origin = (freeX / 2, freeY / 2)
        case .edge(let dx, let dy):
            origin = (dx < 0 ? 0 : dx > 0 ? freeX : freeX / 2, dy < 0 ? 0 : dy > 0 ? freeY : freeY / 2)
        case .focus(let fx, let fy):
            origin = (
                Int((fx * Double(size.width) - Double(window.width) / 2).rounded()),
                Int((fy * Double(size.height) - Double(window.height) / 2).rounded())
            )
        case .smart:
            origin = smartOrigin?(window) ?? (freeX / 2, freeY / 2)
        }
        return Rect(
            x: min(max(0, origin.x), freeX), y: min(max(0, origin.y), freeY), width: window.width,
            height: window.height)
    }
}
