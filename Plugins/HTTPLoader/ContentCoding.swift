import CZlib
import Foundation
import ImageCore

/// A content coding (RFC 9110 §8.4.1) the loader removes from a body before anyone sees it: `gzip` (and its alias
/// `x-gzip`) and `deflate`.
///
/// The loader sends no `Accept-Encoding`, which means any coding is acceptable (RFC 9110 §12.5.3), and origins use
/// that: a store that keeps images gzipped (`Content-Encoding: gzip` set on upload) sends them so to every client. A
/// browser shows such an image; a loader that handed the gzip bytes on failed it as data no coder reads. The body is
/// decoded whole once it arrived (an image is decoded whole anyway), never past the loader's
/// ``HTTPLoaderConfiguration/maximumResponseSize``, so a small body that inflates without end (a "zip bomb") fails
/// `downloadTooLarge` after at most that many bytes. A coding the loader can't remove (`br`, `zstd`, `compress`)
/// fails the response at its head: those bytes are not the image.
enum ContentCoding: Sendable, Equatable {
    case gzip
    case deflate

    /// More codings than this on one body are refused: each layer may inflate up to the size limit again.
    static let maximumLayers = 2

    /// The codings a `Content-Encoding` value lists, in the order the origin applied them (`identity` dropped); a
    /// failure (`invalidDownloadResponse`) for a coding the loader can't remove, or more than ``maximumLayers``.
    static func codings(_ header: String?) -> Result<[ContentCoding], ImageError> {
        guard let header else { return .success([]) }
        var codings: [ContentCoding] = []
        for token in header.split(separator: ",") {
            switch token.trimmingCharacters(in: .whitespaces).lowercased() {
            case "", "identity": continue
            case "gzip", "x-gzip": codings.append(.gzip)
            case "deflate": codings.append(.deflate)
            case let other: return .failure(refusal("content coding \(other.prefix(40)) is not supported"))
            }
        }
        guard codings.count <= maximumLayers else {
            return .failure(refusal("\(codings.count) content codings (at most \(maximumLayers))"))
        }
        return .success(codings)
    }

    /// `data` with `codings` removed (the last applied first), at most `limit` bytes.
    ///
    /// - Throws: `downloadTooLarge` past `limit`; `invalidDownloadResponse` when the coded bytes are corrupt or end
    ///   before their coding does.
    static func decode(_ data: Data, _ codings: [ContentCoding], limit: Int) throws(ImageError) -> Data {
        var data = data
        for coding in codings.reversed() {
            switch coding {
            case .gzip:
                // 15 + 32: zlib detects gzip or zlib framing itself (some origins label a zlib stream gzip).
                data = try Inflation.inflate(data, windowBits: 15 + 32, coding: "gzip", limit: limit)
            case .deflate:
                // RFC 9110's deflate is a zlib stream; some servers send raw deflate instead.
                do {
                    data = try Inflation.inflate(data, windowBits: 15, coding: "deflate", limit: limit)
                } catch let error where error.code == .invalidDownloadResponse {
                    data = try Inflation.inflate(data, windowBits: -15, coding: "deflate", limit: limit)
                }
            }
        }
        return data
    }

    static func refusal(_ message: String) -> ImageError {
        ImageError(.invalidDownloadResponse, stage: .download, message: message)
    }
}

/// One zlib inflate stream over a whole body: the only owner of its `z_stream`, ended before it returns.
private enum Inflation {
    static func inflate(_ input: Data, windowBits: Int32, coding: String, limit: Int) throws(ImageError) -> Data {
        var stream = z_stream()
        guard czlib_inflate_init(&stream, windowBits) == Z_OK else {
            throw ContentCoding.refusal("the \(coding) decoder could not start")
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        let stop: Stop? = input.withUnsafeBytes { raw -> Stop? in
            guard let base = raw.bindMemory(to: Bytef.self).baseAddress else {
                return .failed("the \(coding) body is empty")
            }
            guard raw.count <= Int(uInt.max) else { return .tooLarge }
            stream.next_in = UnsafeMutablePointer(mutating: base)
            stream.avail_in = uInt(raw.count)
            defer { stream.next_in = nil }
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    defer { stream.next_out = nil }
                    return CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                guard output.count + produced <= limit else { return .tooLarge }
                output.append(contentsOf: chunk[0..<produced])
                switch status {
                case Z_STREAM_END:
                    // A gzip body may hold several members (RFC 1952 §2.2): go on with the next one. Bytes after the
                    // last member that start no other (padding) are ignored, as gzip(1) and browsers do.
                    guard stream.avail_in >= 2, windowBits > 15, stream.next_in[0] == 0x1F, stream.next_in[1] == 0x8B
                    else { return nil }
                    guard inflateReset(&stream) == Z_OK else {
                        return .failed("the \(coding) decoder could not restart")
                    }
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    return .failed("the \(coding) body ends before its coding does")
                default:
                    let reason = stream.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                    return .failed("the \(coding) body is corrupt (\(reason))")
                }
            }
        }
        switch stop {
        case nil: return output
        case .tooLarge?:
            throw TransferStateMachine.tooLarge(
                "more than \(limit) bytes once its \(coding) coding is removed", limit: limit)
        case .failed(let message)?: throw ContentCoding.refusal(message)
        }
    }

    private enum Stop {
        case tooLarge
        case failed(String)
    }
}
