import CZlib
import Foundation
import HTTPLoader
import ImageCore
import ImageTestSupport
import PNGCoder
import Testing

/// A body with a content coding (RFC 9110 §8.4): the loader sends no `Accept-Encoding`, so an origin may gzip
/// anything, and stores that keep images gzipped do. Before, those bytes were handed on as the image and failed
/// `noCoder`; a browser shows the image. The coding is now removed once, whole, within the size limit; a coding
/// the loader can't remove fails the response at its head.
@Suite struct HTTPLoaderContentCodingTests {
    static let image = pngLikeBytes(count: 3000)

    @Test func codedBodiesArriveDecoded() async throws {
        let body = Self.image
        let cases: [String: (String, [UInt8])] = [
            "/gzip.png": ("gzip", Coding.gzip(body)),
            "/xgzip.png": ("x-gzip", Coding.gzip(body)),
            "/deflate.png": ("deflate", Coding.zlib(body)),
            "/raw.png": ("deflate", Coding.rawDeflate(body)),
            "/two.png": ("deflate, gzip", Coding.gzip(Coding.zlib(body))),
            "/identity.png": ("identity", body),
            "/members.png": ("gzip", Coding.gzip(Array(body[0..<1000])) + Coding.gzip(Array(body[1000...]))),
            "/padded.png": ("gzip", Coding.gzip(body) + [0, 0, 0, 0]),
        ]
        try await withServer(script: { request in
            let (coding, sent) = cases[request.path]!
            return .respond(headers: [("Content-Type", "image/png"), ("Content-Encoding", coding)], body: sent)
        }) { server, loader in
            for path in cases.keys.sorted() {
                let loaded = try #require(await load(loader, server.url(path)), "\(path)")
                #expect(loaded.value?.data == Data(body), "\(path): \(loaded.error.map { "\($0)" } ?? "other bytes")")
            }
        }
    }

    @Test func codingsThatCannotBeRemovedFailClearly() async throws {
        let body = Self.image
        let gzip = Coding.gzip(body)
        var corrupt = gzip
        corrupt[20] ^= 0xFF
        corrupt[21] ^= 0xFF
        let cases: [String: (String, [UInt8], ImageError.Code)] = [
            "/br.png": ("br", body, .invalidDownloadResponse),
            "/zstd.png": ("gzip, zstd", body, .invalidDownloadResponse),
            "/layers.png": ("gzip, gzip, gzip", Coding.gzip(Coding.gzip(gzip)), .invalidDownloadResponse),
            "/corrupt.png": ("gzip", corrupt, .invalidDownloadResponse),
            "/cut.png": ("gzip", Array(gzip.prefix(gzip.count / 2)), .invalidDownloadResponse),
            "/notgzip.png": ("gzip", body, .invalidDownloadResponse),
            // 8 MiB of zeros in about 8 KB: over the 1 MiB limit once inflated.
            "/bomb.png": ("gzip", Coding.gzip([UInt8](repeating: 0, count: 8 << 20)), .downloadTooLarge),
            "/twice.png": (
                "gzip, gzip", Coding.gzip(Coding.gzip([UInt8](repeating: 0, count: 8 << 20))), .downloadTooLarge
            ),
        ]
        try await withServer(
            loader: { $0.maximumResponseSize = 1 << 20 },
            script: { request in
                let (coding, sent, _) = cases[request.path]!
                return .respond(headers: [("Content-Type", "image/png"), ("Content-Encoding", coding)], body: sent)
            }
        ) { server, loader in
            for (path, (_, _, code)) in cases.sorted(by: { $0.key < $1.key }) {
                let error = try #require(await load(loader, server.url(path))?.error, "\(path) loaded")
                #expect(error.code == code && error.stage == .download, "\(path): \(error)")
                #expect(error.response?.statusCode == 200, "\(path): the response is attached")
            }
        }
    }

    /// A 3xx taken as an answer (the ImageService follows redirects itself) is never an image: its body's coding,
    /// whatever it is, is left alone.
    @Test func onlyAnImageBodyIsDecoded() async throws {
        try await withServer(
            loader: {
                $0.maximumRedirects = 0
                $0.acceptableStatusCodes.insert(302)
            },
            script: { _ in
                .respond(
                    status: .found, headers: [("Location", "/elsewhere.png"), ("Content-Encoding", "br")],
                    body: Array("not brotli".utf8))
            }
        ) { server, loader in
            let loaded = try #require(await load(loader, server.url("/moved.png")))
            #expect(loaded.value?.response.statusCode == 302, "\(loaded.error.map { "\($0)" } ?? "")")
            #expect(loaded.value?.data == Data("not brotli".utf8))
        }
    }

    /// Through the manager as users load: a gzipped PNG decodes (progressive loads too: a coded body's prefix is
    /// not the image's), and the header check judges the decoded body, so a gzipped PNG header that claims
    /// 65535 × 65535 pixels is refused by the pixel budget, not handed to the decoder.
    @Test func theManagerDecodesACodedImageAndChecksItsHeader() async throws {
        let samples = (0..<(24 * 16 * 3)).map { UInt16($0 % 251) }
        let png = [UInt8](PNGFixtures.make(width: 24, height: 16, bitDepth: 8, colorType: .rgb, samples: samples))
        let bomb = [UInt8](PNGFixtures.headerOnly(width: 65535, height: 65535))
        try await withServer(script: { request in
            let sent = request.path == "/bomb.png" ? bomb : png
            return .respond(
                headers: [("Content-Type", "image/png"), ("Content-Encoding", "gzip")], body: Coding.gzip(sent))
        }) { server, loader in
            let manager = ImageManager(
                cache: RecordingCache(), loader: loader, coders: CodersManager(coders: [PNGCoder.shared]))
            for options in [ImageOptions(), .progressiveLoad] {
                let result = try await manager.loadImage(
                    with: server.url("/photo.png?\(options.rawValue)"), options: options)
                #expect(result.image.width == 24 && result.image.height == 16)
            }
            do throws(ImageError) {
                _ = try await manager.loadImage(with: server.url("/bomb.png"))
                Issue.record("the coded bomb loaded")
            } catch {
                #expect(error.code == .imageTooLarge, "\(error)")
            }
        }
    }
}

/// Coded bodies made with zlib, as origins make them.
enum Coding {
    static func gzip(_ bytes: [UInt8]) -> [UInt8] { deflate(bytes, windowBits: 15 + 16) }
    static func zlib(_ bytes: [UInt8]) -> [UInt8] { deflate(bytes, windowBits: 15) }
    static func rawDeflate(_ bytes: [UInt8]) -> [UInt8] { deflate(bytes, windowBits: -15) }

    private static func deflate(_ bytes: [UInt8], windowBits: Int32) -> [UInt8] {
        var stream = z_stream()
        precondition(czlib_deflate_init(&stream, 6, windowBits) == Z_OK)
        defer { deflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 64)
        let written = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                precondition(CZlib.deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return target.count - Int(stream.avail_out)
            }
        }
        return Array(output.prefix(written))
    }
}
