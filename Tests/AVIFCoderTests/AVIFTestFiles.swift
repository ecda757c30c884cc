import CAVIF
import Foundation
import ImageCore

/// Builds AVIF files with libavif directly, for what the SDK's encoder does not write: 10/12-bit samples,
/// premultiplied alpha, `clap` / `irot` / `imir`, EXIF, grids. Traps on a libavif failure (a broken test input).
enum AVIFTestFiles {
    struct Spec {
        var width = 64
        var height = 48
        var depth: UInt32 = 8
        var format = AVIF_PIXEL_FORMAT_YUV444
        var alpha = false
        var premultiplied = false
        var lossless = true
        var rotation: UInt8?
        var mirror: UInt8?
        /// Clean aperture as a crop rectangle in stored pixels.
        var crop: (x: UInt32, y: UInt32, width: UInt32, height: UInt32)?
        var exif: [UInt8]?
        var icc: [UInt8]?
        /// Grid columns x rows (each cell width/cols x height/rows).
        var grid: (columns: Int, rows: Int)?
    }

    /// The straight RGBA pattern every spec encodes (8-bit view): a gradient with a diagonal alpha ramp.
    static func pattern(width: Int, height: Int, alpha: Bool) -> [UInt8] {
        var bytes = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                bytes[i] = UInt8(x * 255 / max(1, width - 1))
                bytes[i + 1] = UInt8(y * 255 / max(1, height - 1))
                bytes[i + 2] = UInt8((x + y) * 255 / max(1, width + height - 2))
                if alpha { bytes[i + 3] = UInt8(min(255, 40 + (x + 2 * y) * 215 / max(1, width + 2 * height - 3))) }
            }
        }
        return bytes
    }

    static func makeImage(_ spec: Spec, x: Int = 0, y: Int = 0, width: Int, height: Int) -> UnsafeMutablePointer<
        avifImage
    > {
        let image = avifImageCreate(UInt32(width), UInt32(height), spec.depth, spec.format)!
        image.pointee.yuvRange = AVIF_RANGE_FULL
        if spec.lossless && spec.format == AVIF_PIXEL_FORMAT_YUV444 {
            image.pointee.matrixCoefficients = UInt16(AVIF_MATRIX_COEFFICIENTS_IDENTITY)
        }
        let full = pattern(width: spec.width, height: spec.height, alpha: spec.alpha)
        var cell = [UInt8](repeating: 0, count: width * height * 4)
        for row in 0..<height {
            let from = ((y + row) * spec.width + x) * 4
            cell.replaceSubrange(row * width * 4..<(row + 1) * width * 4, with: full[from..<from + width * 4])
        }
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.depth = 8
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.ignoreAlpha = spec.alpha ? AVIF_FALSE : AVIF_TRUE
        rgb.rowBytes = UInt32(width * 4)
        cell.withUnsafeMutableBufferPointer { buffer in
            rgb.pixels = buffer.baseAddress
            precondition(avifImageRGBToYUV(image, &rgb) == AVIF_RESULT_OK)
        }
        image.pointee.alphaPremultiplied = spec.premultiplied ? AVIF_TRUE : AVIF_FALSE
        if let rotation = spec.rotation {
            image.pointee.transformFlags |= UInt32(AVIF_TRANSFORM_IROT.rawValue)
            image.pointee.irot.angle = rotation
        }
        if let mirror = spec.mirror {
            image.pointee.transformFlags |= UInt32(AVIF_TRANSFORM_IMIR.rawValue)
            image.pointee.imir.mode = mirror
        }
        if let crop = spec.crop {
            var rect = avifCropRect(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
            var diagnostics = avifDiagnostics()
            precondition(
                avifCleanApertureBoxConvertCropRect(
                    &image.pointee.clap, &rect, UInt32(spec.width), UInt32(spec.height), spec.format, &diagnostics)
                    != AVIF_FALSE)
            image.pointee.transformFlags |= UInt32(AVIF_TRANSFORM_CLAP.rawValue)
        }
        if let exif = spec.exif {
            exif.withUnsafeBufferPointer { avifImageSetMetadataExif(image, $0.baseAddress, $0.count) }
        }
        if let icc = spec.icc {
            icc.withUnsafeBufferPointer { avifImageSetProfileICC(image, $0.baseAddress, $0.count) }
        }
        return image
    }

    static func encode(_ spec: Spec) -> Data {
        let encoder = avifEncoderCreate()!
        defer { avifEncoderDestroy(encoder) }
        encoder.pointee.speed = 10
        let q: Int32 = spec.lossless ? 0 : 20
        (encoder.pointee.minQuantizer, encoder.pointee.maxQuantizer) = (q, q)
        (encoder.pointee.minQuantizerAlpha, encoder.pointee.maxQuantizerAlpha) = (q, q)
        var cells: [UnsafeMutablePointer<avifImage>] = []
        defer { cells.forEach { avifImageDestroy($0) } }
        if let grid = spec.grid {
            let cellWidth = spec.width / grid.columns
            let cellHeight = spec.height / grid.rows
            for row in 0..<grid.rows {
                for column in 0..<grid.columns {
                    cells.append(
                        makeImage(
                            spec, x: column * cellWidth, y: row * cellHeight, width: cellWidth, height: cellHeight))
                }
            }
            let pointers: [UnsafePointer<avifImage>?] = cells.map { UnsafePointer($0) }
            let result = pointers.withUnsafeBufferPointer {
                avifEncoderAddImageGrid(
                    encoder, UInt32(grid.columns), UInt32(grid.rows), $0.baseAddress,
                    AVIF_ADD_IMAGE_FLAG_SINGLE.rawValue)
            }
            precondition(result == AVIF_RESULT_OK, String(cString: avifResultToString(result)))
        } else {
            cells.append(makeImage(spec, width: spec.width, height: spec.height))
            let result = avifEncoderAddImage(encoder, cells[0], 1, AVIF_ADD_IMAGE_FLAG_SINGLE.rawValue)
            precondition(result == AVIF_RESULT_OK, String(cString: avifResultToString(result)))
        }
        var output = avifRWData()
        defer { avifRWDataFree(&output) }
        precondition(avifEncoderFinish(encoder, &output) == AVIF_RESULT_OK)
        return Data(bytes: output.data, count: output.size)
    }
}

/// Test images in the SDK's model.
func rgbaImage(width: Int, height: Int, alpha: Bool, frames: Int = 1, duration: Double = 0.25) -> Image {
    let list = (0..<frames).map { index -> ImageFrame in
        var bytes = AVIFTestFiles.pattern(width: width, height: height, alpha: alpha)
        for i in stride(from: 0, to: bytes.count, by: 4) {
            bytes[i] = bytes[i] &+ UInt8(truncatingIfNeeded: index * 60)
        }
        return ImageFrame(
            pixels: PixelBuffer(width: width, height: height, layout: .rgba8, alphaMode: .straight, bytes: bytes),
            duration: frames > 1 ? duration : 0)
    }
    return Image(frames: list)
}

/// Mean absolute difference of two buffers of equal geometry and layout.
func meanAbsoluteDifference(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    precondition(a.width == b.width && a.height == b.height && a.layout == b.layout)
    var total = 0
    for (x, y) in zip(a.bytes, b.bytes) { total += abs(Int(x) - Int(y)) }
    return Double(total) / Double(max(1, a.bytes.count))
}
