import ImageCore

/// Allocation and validation helpers shared by the transformers.
enum PixelStorage {
    /// The largest output a transformer will allocate, in pixels (2^28 ≈ 268 MP, 1 GiB of RGBA).
    static let maximumPixelCount = 1 << 28

    /// Throws ``ImageError/Code/imageTooLarge`` when `width × height` is beyond ``maximumPixelCount``, and
    /// ``ImageError/Code/transformFailed`` when a side is not positive.
    static func validate(width: Int, height: Int, what: String) throws {
        guard width > 0, height > 0 else {
            throw ImageError(.transformFailed, stage: .transform, message: "\(what): empty size \(width)x\(height)")
        }
        let product = width.multipliedReportingOverflow(by: height)
        guard !product.overflow, product.partialValue <= maximumPixelCount else {
            throw ImageError(
                .imageTooLarge, stage: .transform,
                message: "\(what): \(width)x\(height) exceeds \(maximumPixelCount) pixels")
        }
    }

    /// Creates a tightly packed buffer in pooled storage whose bytes `fill` writes; every byte must be written by
    /// `fill` (the storage is recycled: a byte it skips holds an earlier image's value).
    static func make(
        width: Int, height: Int, layout: PixelLayout, alphaMode: AlphaMode,
        _ fill: (UnsafeMutablePointer<UInt8>) -> Void
    ) -> PixelBuffer {
        PixelBuffer(width: width, height: height, layout: layout, alphaMode: alphaMode) { buffer in
            if buffer.count > 0, let base = buffer.baseAddress { fill(base) }
        }
    }

    /// The error thrown for parameters a transformer cannot apply.
    static func invalid(_ message: String) -> ImageError {
        ImageError(.transformFailed, stage: .transform, message: message)
    }
}

extension PixelBuffer {
    /// The layout that adds an alpha channel to this one (RGB → RGBA, gray → gray + alpha).
    var layoutWithAlpha: PixelLayout {
        switch layout {
        case .rgba8, .rgb8: .rgba8
        case .gray8, .grayAlpha8: .grayAlpha8
        }
    }

    /// The alpha mode of a result with `layout`: keeps premultiplied input premultiplied, else straight.
    func alphaMode(for layout: PixelLayout) -> AlphaMode {
        guard layout.hasAlpha else { return .none }
        return alphaMode == .premultiplied ? .premultiplied : .straight
    }
}
