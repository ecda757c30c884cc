import Foundation
import ImageCore

/// Decodes a JPEG from a growing prefix by re-decoding the prefix with TurboJPEG.
///
/// libjpeg-turbo decodes a truncated stream with a "premature end" warning: the coefficients received so far are
/// used (a progressive JPEG shows its completed scans, a baseline JPEG its top rows; the missing area repeats the last
/// DC values). To bound the work, a progressive JPEG is re-decoded only when a new scan has started (so each
/// completed scan costs one decode), a baseline JPEG only when the prefix grew by at least 25% (and 16 KiB) since
/// the last preview, so a download costs O(log n) decodes. Once `isFinal`, the image is ``JPEGDecoder``'s decode of
/// the bytes, exactly what ``JPEGCoder/decode(_:options:)`` returns. Errors before the end keep the last preview;
/// the pixel budget is enforced as soon as the header arrived.
///
/// Not thread-safe: one owner drives it from one thread at a time, as ``IncrementalImageDecoder`` requires.
final class JPEGIncrementalDecoder: IncrementalImageDecoder {
    private let options: ImageDecodeOptions
    private var data = Data()
    private var isFinal = false
    private var final: Result<Image, any Error>?
    private var preview: Image?
    private var previewScans = 0
    private var previewBytes = 0
    private var headerChecked = false
    private var markers: JPEGMarkers?
    private var scans = 0
    private var scanCursor = 0

    init(options: ImageDecodeOptions) { self.options = options }

    func update(_ data: Data, isFinal: Bool) {
        self.data = data
        self.isFinal = isFinal
    }

    func currentImage() throws -> Image? {
        if isFinal {
            if final == nil { final = Result { try JPEGDecoder.decode(data, options: options) } }
            return try final?.get()
        }
        // Headers are re-parsed until the first SOS arrived; after that only the new bytes are searched for SOS.
        let markers = self.markers ?? data.withUnsafeBytes { JPEGMarkers.scan($0) }
        if let first = markers.firstScanOffset {
            self.markers = markers
            data.withUnsafeBytes { bytes in
                let start = max(first, scanCursor)
                guard start + 1 < bytes.count else { return }
                scans += JPEGMarkers.scanCount(bytes, firstScanOffset: start)
                scanCursor = bytes.count - 1  // the last byte may be the FF of a marker split across updates
            }
        }
        if !headerChecked, markers.firstScanOffset != nil || scans > 0 || data.count > 1024 {
            // Enforce the budget as soon as the frame header is readable, whatever the preview policy says.
            let header = data.withUnsafeBytes { bytes in
                (try? TurboJPEG.decompressor()).flatMap { try? $0.header(bytes) }
            }
            if let header {
                headerChecked = true
                try options.checkPixelBudget(width: header.width, height: header.height)
            }
        }
        guard scans > 0 else { return preview }
        if markers.isProgressive {
            // Scan n has started, so scans 1..<n are complete; the first preview waits for one complete scan.
            guard scans - 1 > previewScans else { return preview }
        } else {
            guard data.count - previewBytes >= max(16 * 1024, previewBytes / 4) else { return preview }
        }
        do {
            preview = try JPEGDecoder.decode(data, options: options, isPartial: true)
            previewScans = scans - 1
            previewBytes = data.count
        } catch let error as ImageError where error.code == .imageTooLarge {
            throw error
        } catch {
            // A prefix cut at an unlucky place may not decode yet; the final decode decides.
        }
        return preview
    }
}
