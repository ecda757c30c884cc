internal import CAVIF
import ImageCore

/// What a shrink-on-load AVIF conversion held (tests use it to prove a thumbnail never holds full-size RGB).
struct AVIFStripReport: Equatable {
    /// Rows converted per strip (before the margins).
    var rowsPerStrip: Int
    /// Bytes of the RGB(A) strip buffer, margins included.
    var stripBytes: Int
}

/// Owns a view `avifImage` (`avifImageCreateEmpty`, pointed at rows of a decoded image with
/// `avifImageSetViewRect`); destroys it in `deinit`, which frees nothing of the image it views.
final class AVIFImageView {
    let image: UnsafeMutablePointer<avifImage>

    init() throws(ImageError) {
        guard let image = avifImageCreateEmpty() else {
            throw AVIFStatus.missing("avifImageCreateEmpty failed", stage: .decode)
        }
        self.image = image
    }

    deinit { avifImageDestroy(image) }
}

/// Shrink-on-load for AVIF: the decoded YUV planes are converted to 8-bit RGB(A) a strip of rows at a time and
/// fed to ImageCore's area reducer, so a thumbnail of a 12 MP AVIF never holds full-size RGB (AV1 itself has no
/// reduced decode; the YUV planes are the codec's).
///
/// Each strip is converted with two rows of margin on either side when chroma is subsampled vertically, so the
/// chroma upsampling of every row sees the same neighbours as in a whole-image conversion: the result is byte for
/// byte the full conversion, cropped, then `areaResampled`. Monochrome images keep one channel per strip, as
/// `PixelBuffer.grayFromEqualChannels()` does. Not thread-safe: used inside one frame decode.
enum AVIFStripReducer {
    /// RGB(A) bytes per strip, before the margins.
    static let stripBytes = 512 * 1024

    /// Converts `image` (stored orientation) cropped to `crop` (stored coordinates, nil for all of it) and reduced
    /// to `target`.
    static func convert(
        _ image: UnsafeMutablePointer<avifImage>, hasAlpha: Bool, crop: AVIFTransforms.Rect?, target: PixelSize
    ) throws(ImageError) -> (PixelBuffer, AVIFStripReport) {
        let width = Int(image.pointee.width)
        let height = Int(image.pointee.height)
        guard width > 0, height > 0 else {
            throw ImageError(.badImageData, stage: .decode, message: "decoded AVIF frame has size \(width)x\(height)")
        }
        let region = crop ?? AVIFTransforms.Rect(x: 0, y: 0, width: width, height: height)
        let alpha = hasAlpha && image.pointee.alphaPlane != nil
        let premultiplied = alpha && image.pointee.alphaPremultiplied != AVIF_FALSE
        let monochrome = image.pointee.yuvFormat == AVIF_PIXEL_FORMAT_YUV400
        var format = avifPixelFormatInfo()
        avifGetPixelFormatInfo(image.pointee.yuvFormat, &format)
        let margin = !monochrome && format.chromaShiftY > 0 ? 2 : 0
        let channels = alpha ? 4 : 3
        let rowBytes = width * channels
        let rows = max(2, (stripBytes / rowBytes) & ~1)
        let bufferRows = min(height, rows + 2 * margin + 1)
        let strip = UnsafeMutablePointer<UInt8>.allocate(capacity: bufferRows * rowBytes)
        defer { strip.deallocate() }
        let grayChannels = alpha ? 2 : 1
        let grayRows = UnsafeMutablePointer<UInt8>.allocate(
            capacity: monochrome ? rows * region.width * grayChannels : 1)
        defer { grayRows.deallocate() }
        let layout: PixelLayout = monochrome ? (alpha ? .grayAlpha8 : .gray8) : (alpha ? .rgba8 : .rgb8)
        let reducer = AreaReducer(
            sourceWidth: region.width, sourceHeight: region.height, width: target.width, height: target.height,
            layout: layout, alphaMode: alpha ? (premultiplied ? .premultiplied : .straight) : .none)
        let view = try AVIFImageView()
        var start = region.y
        let end = region.y + region.height
        while start < end {
            let stop = min(end, start + rows)
            // Rows start ..< stop, converted with their margins; a 4:2:0 view must start on an even row.
            let viewTop = max(0, start - margin) & (margin > 0 ? ~1 : ~0)
            let viewBottom = min(height, stop + margin)
            var rect = avifCropRect(
                x: 0, y: UInt32(viewTop), width: UInt32(width), height: UInt32(viewBottom - viewTop))
            var status = avifImageSetViewRect(view.image, image, &rect)
            if status == AVIF_RESULT_OK {
                var rgb = avifRGBImage()
                avifRGBImageSetDefaults(&rgb, view.image)
                rgb.depth = 8
                rgb.format = alpha ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB
                rgb.alphaPremultiplied = premultiplied ? AVIF_TRUE : AVIF_FALSE
                rgb.rowBytes = UInt32(rowBytes)
                rgb.pixels = strip
                status = avifImageYUVToRGB(view.image, &rgb)
            }
            guard status == AVIF_RESULT_OK else {
                throw AVIFStatus.decode(status, diagnostics: "", "cannot convert the AVIF frame to RGB")
            }
            let first = strip + (start - viewTop) * rowBytes + region.x * channels
            let count = stop - start
            if monochrome {
                keepFirstChannel(
                    first, rows: count, width: region.width, alpha: alpha, rowBytes: rowBytes, into: grayRows)
                reducer.push(rows: grayRows, count: count, bytesPerRow: region.width * grayChannels)
            } else {
                reducer.push(rows: first, count: count, bytesPerRow: rowBytes)
            }
            start = stop
        }
        return (reducer.finish(), AVIFStripReport(rowsPerStrip: rows, stripBytes: bufferRows * rowBytes))
    }

    /// Gray (and alpha) of RGB(A) rows whose colour channels are equal.
    private static func keepFirstChannel(
        _ source: UnsafePointer<UInt8>, rows: Int, width: Int, alpha: Bool, rowBytes: Int,
        into out: UnsafeMutablePointer<UInt8>
    ) {
        let inStep = alpha ? 4 : 3
        let outStep = alpha ? 2 : 1
        for r in 0..<rows {
            let s = source + r * rowBytes
            let d = out + r * width * outStep
            for x in 0..<width {
                d[x * outStep] = s[x * inStep]
                if alpha { d[x * outStep + 1] = s[x * inStep + 3] }
            }
        }
    }
}

extension AVIFTransforms {
    /// A rectangle in stored pixel coordinates.
    struct Rect: Equatable {
        var x: Int
        var y: Int
        var width: Int
        var height: Int
    }

    /// The crop ``apply(to:)`` performs on stored pixels of `size`: nil when it keeps them whole (no `clap`, or
    /// one that does not fit).
    func effectiveCrop(in size: PixelSize) -> Rect? {
        guard let crop, crop.x + crop.width <= size.width, crop.y + crop.height <= size.height,
            crop.width != size.width || crop.height != size.height
        else { return nil }
        return Rect(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
    }
}
