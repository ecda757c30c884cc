import Foundation
import ImageCore

/// JPEG's step of the incremental decoder: previews re-decode the prefix with TurboJPEG.
///
/// libjpeg-turbo decodes a truncated stream with a "premature end" warning: the coefficients received so far are
/// used (a progressive JPEG shows its completed scans, a baseline JPEG its top rows; the missing area repeats the last
/// DC values). To bound the work, a progressive JPEG is re-decoded only when a new scan has started (so each
/// completed scan costs one decode), a baseline JPEG only when the prefix grew by at least 25% (and 16 KiB) since
/// the last preview, so a download costs O(log n) decodes. A preview that fails (a prefix cut at an unlucky place)
/// is retried with more bytes. The frame header gives the size the scaffold checks against the budget. The final
/// image is ``JPEGDecoder``'s decode of the bytes, exactly what ``JPEGCoder/decode(_:options:)`` returns.
final class JPEGIncrementalStep: IncrementalDecoderStep {
    private let options: ImageDecodeOptions
    private var markers: JPEGMarkers?
    private var scans = 0
    private var scanCursor = 0

    init(options: ImageDecodeOptions) { self.options = options }

    func header(in data: Data) throws -> PixelSize? {
        let markers = readMarkers(data)
        // TurboJPEG reads the frame header once it arrived; before the first scan, only try on a longer prefix.
        guard markers.firstScanOffset != nil || data.count > 1024 else { return nil }
        let header = data.withUnsafeBytes { bytes in
            (try? TurboJPEG.decompressor()).flatMap { try? $0.header(bytes) }
        }
        return header.map { PixelSize(width: $0.width, height: $0.height) }
    }

    /// Completed scans of a progressive JPEG; bytes, in 25% steps, of a baseline one.
    func progress(in data: Data) -> IncrementalProgress? {
        let markers = readMarkers(data)
        guard let first = markers.firstScanOffset else { return nil }
        // Only the bytes new since the last look are searched for SOS.
        data.withUnsafeBytes { bytes in
            let start = max(first, scanCursor)
            guard start + 1 < bytes.count else { return }
            scans += JPEGMarkers.scanCount(bytes, firstScanOffset: start)
            scanCursor = bytes.count - 1  // the last byte may be the FF of a marker split across updates
        }
        guard scans > 0 else { return nil }
        // Scan n has started, so scans 1..<n are complete; the first preview waits for one complete scan.
        if markers.isProgressive { return IncrementalProgress(units: scans - 1) }
        return IncrementalProgress(units: data.count, minimumGain: 16 * 1024, proportionalDivisor: 4)
    }

    func preview(of data: Data) throws -> IncrementalPreview {
        do {
            return .image(try JPEGDecoder.decode(data, options: options, isPartial: true))
        } catch let error as ImageError where error.code == .imageTooLarge {
            throw error
        } catch {
            // A prefix cut at an unlucky place may not decode yet; more bytes may.
            return .nothingNew
        }
    }

    func decodeFinal(_ data: Data) throws -> Image { try JPEGDecoder.decode(data, options: options) }

    /// The segments before the first scan, parsed again until the first SOS arrived, then kept.
    private func readMarkers(_ data: Data) -> JPEGMarkers {
        if let markers { return markers }
        let read = data.withUnsafeBytes { JPEGMarkers.scan($0) }
        if read.firstScanOffset != nil { markers = read }
        return read
    }
}
