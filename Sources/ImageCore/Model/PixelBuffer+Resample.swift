/// Area-average (box) resampling of 8-bit pixel buffers.
///
/// Every output pixel is the average of the source area it covers, weighted by coverage, which is what a
/// thumbnailer wants after the codec already did the coarse reduction. With straight alpha the colour channels are
/// weighted by alpha so transparent pixels do not darken edges; premultiplied buffers are averaged as they are.
/// Shared by the coders for thumbnails and `maxPixelSize` after the codec's own coarse reduction (DCT scaling,
/// libwebp scaling); decoders that deliver rows feed ``AreaReducer`` directly instead, with the same result.
/// ImageTransformers has the high-quality filters. Thread-safe: pure function of its inputs.
enum AreaResampler {
    /// Resamples `source` to `width × height` (each at least 1), keeping its layout and alpha mode.
    static func resample(_ source: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
        precondition(width > 0 && height > 0, "resample target must be positive")
        if width == source.width && height == source.height { return source }
        // An empty source has nothing to average: the result is transparent black (the axes need a sample).
        guard source.width > 0, source.height > 0 else {
            return PixelBuffer(width: width, height: height, layout: source.layout, alphaMode: source.alphaMode)
        }
        let reducer = AreaReducer(
            sourceWidth: source.width, sourceHeight: source.height, width: width, height: height,
            layout: source.layout, alphaMode: source.alphaMode)
        source.withUnsafeBytes { bytes in
            reducer.push(rows: bytes.baseAddress!, count: source.height, bytesPerRow: source.bytesPerRow)
        }
        return reducer.finish()
    }
}

extension PixelBuffer {
    /// Returns the buffer resampled to `width × height` by area averaging (box filter), keeping layout and alpha
    /// mode; straight alpha weights the colour so transparent pixels do not darken edges.
    ///
    /// The average is exact (integer weights and sums) up to the final rounding to 8 bits. Enlarging repeats
    /// source pixels (an output inside one source pixel takes its value).
    /// - Precondition: `width` and `height` are at least 1.
    public func areaResampled(width: Int, height: Int) -> PixelBuffer {
        AreaResampler.resample(self, width: width, height: height)
    }
}

extension PixelBuffer {
    /// A frame of `target` size from the canvas an animation compositor keeps between frames (straight RGBA,
    /// `width × height`, rows packed): copied into pooled storage when the sizes match, else area-averaged straight
    /// from the canvas, so a thumbnail of an animation never copies the full-size canvas first.
    /// - Throws: ``ImageError`` `badImageData` when the canvas is shorter than its geometry, `imageTooLarge` when
    ///   the system refuses the memory.
    package static func frame(
        fromCanvas canvas: [UInt8], width: Int, height: Int, target: PixelSize
    ) throws(ImageError) -> PixelBuffer {
        guard target.width > 0, target.height > 0, width > 0, height > 0,
            target.width != width || target.height != height
        else {
            let full = try PixelBuffer(
                width: width, height: height, layout: .rgba8, alphaMode: .straight, validating: canvas)
            return full.areaResampled(width: max(1, target.width), height: max(1, target.height))
        }
        let rowBytes = try validatedRowBytes(
            width: width, height: height, layout: .rgba8, bytesPerRow: nil, available: canvas.count)
        let reducer = AreaReducer(
            sourceWidth: width, sourceHeight: height, width: target.width, height: target.height, layout: .rgba8,
            alphaMode: .straight)
        canvas.withUnsafeBufferPointer { bytes in
            reducer.push(rows: bytes.baseAddress!, count: height, bytesPerRow: rowBytes)
        }
        return reducer.finish()
    }
}
