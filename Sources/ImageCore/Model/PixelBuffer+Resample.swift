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
