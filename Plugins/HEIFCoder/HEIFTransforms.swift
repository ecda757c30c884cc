import ImageCore

/// The transformative properties of a HEIF image: `clap` (clean aperture crop), `irot` (rotation anticlockwise in
/// 90° steps) and `imir` (mirror), which HEIF applies in that order.
///
/// libheif applies them when it decodes (unless told to ignore them); the coder reads them itself to report the
/// stored orientation and the displayed size, and to refuse a `clap` with a zero denominator (a division by zero
/// in libheif 1.15's crop arithmetic). Thread-safe: a value.
struct HEIFTransforms {
    /// The crop in stored pixels, nil for none.
    var crop: (x: Int, y: Int, width: Int, height: Int)?
    /// `irot` and `imir` as the EXIF orientation that shows the stored pixels upright.
    var orientation: ImageOrientation
    /// The size shown once all three are applied.
    var displayedSize: PixelSize

    init(graph: HEIFItemGraph, item: UInt32, storedSize: PixelSize) throws(ImageError) {
        var rotation = 0
        var mirror: Int?
        var crop: (x: Int, y: Int, width: Int, height: Int)?
        for property in graph.properties(of: item) {
            switch property.type {
            case "irot" where !property.body.isEmpty: rotation = Int(property.body[0] & 3)
            case "imir" where !property.body.isEmpty: mirror = Int(property.body[0] & 1)
            case "clap": crop = try Self.crop(property.body, size: storedSize)
            default: break
            }
        }
        self.crop = crop
        orientation = Self.orientation(rotation: rotation, mirror: mirror)
        let cropped = crop.map { PixelSize(width: $0.width, height: $0.height) } ?? storedSize
        displayedSize =
            orientation.swapsDimensions ? PixelSize(width: cropped.height, height: cropped.width) : cropped
    }

    /// The crop of a `clap` body (eight 32-bit fractions), centred as HEIF defines it and clamped to the image
    /// the way libheif clamps it.
    static func crop(_ body: [UInt8], size: PixelSize) throws(ImageError) -> (x: Int, y: Int, width: Int, height: Int)?
    {
        guard body.count >= 32 else { throw HEIFContainerError.malformed("'clap' is too short") }
        func u32(_ index: Int) -> Int64 {
            let at = index * 4
            return Int64(
                UInt32(body[at]) << 24 | UInt32(body[at + 1]) << 16 | UInt32(body[at + 2]) << 8
                    | UInt32(body[at + 3]))
        }
        func s32(_ index: Int) -> Int64 { Int64(Int32(truncatingIfNeeded: u32(index))) }
        let widthN = u32(0)
        let widthD = u32(1)
        let heightN = u32(2)
        let heightD = u32(3)
        let horizontalN = s32(4)
        let horizontalD = u32(5)
        let verticalN = s32(6)
        let verticalD = u32(7)
        guard widthD != 0, heightD != 0, horizontalD != 0, verticalD != 0 else {
            throw HEIFContainerError.malformed("'clap' has a zero denominator")
        }
        let width = Double(widthN) / Double(widthD)
        let height = Double(heightN) / Double(heightD)
        let centreX = Double(horizontalN) / Double(horizontalD) + Double(size.width - 1) / 2
        let centreY = Double(verticalN) / Double(verticalD) + Double(size.height - 1) / 2
        let left = max(0, Int((centreX - (width - 1) / 2).rounded()))
        let top = max(0, Int((centreY - (height - 1) / 2).rounded()))
        let right = min(size.width - 1, Int((centreX + (width - 1) / 2).rounded()))
        let bottom = min(size.height - 1, Int((centreY + (height - 1) / 2).rounded()))
        guard width >= 1, height >= 1, right >= left, bottom >= top else {
            throw HEIFContainerError.malformed("'clap' crops to nothing")
        }
        let result = (x: left, y: top, width: right - left + 1, height: bottom - top + 1)
        return result.width == size.width && result.height == size.height ? nil : result
    }

    /// The EXIF orientation equal to rotating `rotation` × 90° anticlockwise, then mirroring (`imir` 0: top and
    /// bottom exchanged; 1: left and right, as libheif 1.15 reads it).
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
}
