internal import CWebP
import Foundation
import ImageCore

/// An immutable heap copy of an encoded WebP file at a stable address.
///
/// libwebp's demuxer and animation decoder keep pointers into the bytes for their whole life, which a `Data`
/// cannot promise outside `withUnsafeBytes`; the handles that use these bytes keep a strong reference to them.
final class WebPBytes {
    let pointer: UnsafeMutableRawBufferPointer

    init(_ data: Data) {
        pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(data.count, 1), alignment: 16)
        _ = data.copyBytes(to: pointer)
        count = data.count
    }

    /// Number of bytes (the allocation is at least 1 byte).
    let count: Int

    deinit { pointer.deallocate() }

    /// A `WebPData` view of the bytes, valid while `self` lives.
    var webpData: WebPData {
        WebPData(bytes: pointer.baseAddress!.assumingMemoryBound(to: UInt8.self), size: count)
    }
}

/// Owns a `WebPDemuxer` over ``WebPBytes``; deletes it in `deinit`.
///
/// The demuxer validates the RIFF container (chunk sizes, frame rectangles inside the canvas) and gives access
/// to the ICC profile, loop count and per-frame durations without decoding.
final class WebPDemuxHandle {
    let bytes: WebPBytes
    let demux: OpaquePointer

    init(bytes: WebPBytes) throws(ImageError) {
        var data = bytes.webpData
        guard let demux = WebPDemux(&data) else { throw WebPErrors.malformed("invalid WebP container") }
        self.bytes = bytes
        self.demux = demux
    }

    deinit { WebPDemuxDelete(demux) }

    /// The ICCP chunk's payload, verbatim.
    var iccProfile: [UInt8]? { Self.iccProfile(demux) }

    static func iccProfile(_ demux: OpaquePointer) -> [UInt8]? {
        guard WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS) & ICCP_FLAG.rawValue != 0 else { return nil }
        var chunk = WebPChunkIterator()
        guard WebPDemuxGetChunk(demux, "ICCP", 1, &chunk) != 0 else { return nil }
        defer { WebPDemuxReleaseChunkIterator(&chunk) }
        guard let start = chunk.chunk.bytes, chunk.chunk.size > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: start, count: chunk.chunk.size))
    }

    /// Display time of every frame in seconds, with the browsers' clamp (10 ms or less plays at 100 ms).
    static func durations(_ demux: OpaquePointer, limit: Int) -> [Double] {
        let count = min(limit, Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT)))
        var result: [Double] = []
        result.reserveCapacity(count)
        var iterator = WebPIterator()
        for index in 0..<count {
            var milliseconds = 0
            if WebPDemuxGetFrame(demux, Int32(index + 1), &iterator) != 0 {
                milliseconds = Int(iterator.duration)
                WebPDemuxReleaseIterator(&iterator)
            }
            result.append(milliseconds <= 10 ? 0.1 : Double(milliseconds) / 1000)
        }
        return result
    }
}
