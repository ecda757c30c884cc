internal import CAVIF
import ImageCore

/// The HEIF transformative properties of an AVIF image: `clap` (clean aperture crop), then `irot` (rotation
/// anticlockwise), then `imir` (mirror), in that order as the HEIF specification applies them.
///
/// libavif reports them without applying them; the coder applies them by default, the way the JPEG coder applies
/// EXIF orientation, and keeps the stored pixels when ``ImageDecodeOptions/applyOrientation`` is false (the
/// rotation and mirror are then reported as ``ImageMetadata/orientation``). Thread-safe: a value.
struct AVIFTransforms: Equatable, Sendable {
    /// The crop in stored pixel coordinates, nil for none (or a `clap` that is not a valid crop).
    var crop: (x: Int, y: Int, width: Int, height: Int)?
    /// `irot` and `imir` as the EXIF orientation that turns the stored pixels upright.
    var orientation: ImageOrientation

    static func == (a: AVIFTransforms, b: AVIFTransforms) -> Bool {
        a.orientation == b.orientation && a.crop?.x == b.crop?.x && a.crop?.y == b.crop?.y
            && a.crop?.width == b.crop?.width && a.crop?.height == b.crop?.height
    }

    /// Reads the transforms libavif parsed into `image` (valid after `avifDecoderParse`).
    init(_ image: UnsafeMutablePointer<avifImage>) {
        let flags = image.pointee.transformFlags
        let rotation = flags & UInt32(AVIF_TRANSFORM_IROT.rawValue) != 0 ? Int(image.pointee.irot.angle & 3) : 0
        let mirror: Int? = flags & UInt32(AVIF_TRANSFORM_IMIR.rawValue) != 0 ? Int(image.pointee.imir.mode & 1) : nil
        orientation = Self.orientation(rotation: rotation, mirror: mirror)
        crop = nil
        if flags & UInt32(AVIF_TRANSFORM_CLAP.rawValue) != 0 {
            var rect = avifCropRect()
            var diagnostics = avifDiagnostics()
            if avifCropRectConvertCleanApertureBox(
                &rect, &image.pointee.clap, image.pointee.width, image.pointee.height, image.pointee.yuvFormat,
                &diagnostics) != AVIF_FALSE, rect.width > 0, rect.height > 0
            {
                crop = (Int(rect.x), Int(rect.y), Int(rect.width), Int(rect.height))
            }
        }
    }

    /// The EXIF orientation equal to rotating `rotation` × 90° anticlockwise, then mirroring (`imir` mode 0:
    /// top and bottom exchanged; 1: left and right).
    static func orientation(rotation: Int, mirror: Int?) -> ImageOrientation {
        switch (rotation & 3, mirror) {
        case (0, nil): .up
        case (0, 1): .upMirrored
        case (0, _): .downMirrored
        case (1, nil): .left
        case (1, 1): .rightMirrored
        case (1, _): .leftMirrored
        case (2, nil): .down
        case (2, 1): .downMirrored
        case (2, _): .upMirrored
        case (_, nil): .right
        case (_, 1): .leftMirrored
        case (_, _): .rightMirrored
        }
    }

    /// `irot` angle and `imir` mode that show pixels stored with `orientation` upright (for the encoder).
    static func properties(for orientation: ImageOrientation) -> (rotation: Int, mirror: Int?) {
        switch orientation {
        case .up: (0, nil)
        case .upMirrored: (0, 1)
        case .down: (2, nil)
        case .downMirrored: (0, 0)
        case .leftMirrored: (1, 0)
        case .right: (3, nil)
        case .rightMirrored: (1, 1)
        case .left: (1, nil)
        }
    }

    /// True when applying changes nothing.
    var isIdentity: Bool { crop == nil && orientation == .up }

    /// The displayed size of a stored `size`.
    func displayedSize(of size: PixelSize) -> PixelSize {
        let cropped = crop.map { PixelSize(width: $0.width, height: $0.height) } ?? size
        return orientation.swapsDimensions ? PixelSize(width: cropped.height, height: cropped.width) : cropped
    }

    /// Crops, rotates and mirrors `pixels` to how the image is meant to be shown.
    func apply(to pixels: PixelBuffer) -> PixelBuffer {
        var result = pixels
        if let crop, crop.x + crop.width <= pixels.width, crop.y + crop.height <= pixels.height,
            crop.width != pixels.width || crop.height != pixels.height
        {
            result = Self.crop(pixels, x: crop.x, y: crop.y, width: crop.width, height: crop.height)
        }
        return result.oriented(orientation)
    }

    private static func crop(_ source: PixelBuffer, x: Int, y: Int, width: Int, height: Int) -> PixelBuffer {
        let bpp = source.layout.bytesPerPixel
        let rowBytes = width * bpp
        var bytes = [UInt8]()
        bytes.reserveCapacity(rowBytes * height)
        source.withUnsafeBytes { all in
            for row in y..<(y + height) {
                let start = row * source.bytesPerRow + x * bpp
                bytes.append(contentsOf: all[start..<start + rowBytes])
            }
        }
        return PixelBuffer(
            width: width, height: height, layout: source.layout, alphaMode: source.alphaMode, bytes: bytes)
    }
}
