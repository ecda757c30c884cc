import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import WebImage

/// The soak's origin: an HTTP/1.1 server on 127.0.0.1 that answers each path prefix with one behaviour, good or
/// hostile (see ``SoakServer/Route``). Bodies are generated once at start with the SDK's own encoders.
final class SoakServer: Sendable {
    /// What a path prefix serves.
    enum Route: String, CaseIterable, Sendable {
        /// One of the photos (JPEG 320x240), cacheable.
        case photo
        /// An animated GIF (12 frames of 120x90).
        case anim
        /// A photo sent in 8 parts 150 ms apart (about 1.1 s).
        case slow
        /// A head and then nothing, until the client gives up or cancels.
        case stall
        /// Content-Length announces the whole photo; half of it arrives, then the connection closes.
        case truncated
        /// 200 `image/png` with bytes that are no image.
        case garbage
        /// A PNG header declaring 65535x65535, then 4 MiB of body: must be cut at the header.
        case bomb
        /// 500 with an HTML body.
        case error
    }

    struct Bodies: Sendable {
        let photos: [[UInt8]]
        let animation: [UInt8]
        let bombHead: [UInt8]
    }

    static let photoWidth = 320
    static let photoHeight = 240
    static let bombBodyBytes = 4 << 20

    let bodies: Bodies
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel = Locked<(any Channel)?>(nil)
    private let served = Locked([Route: Int]())

    init() throws {
        let coders = CodersManager.shared
        let photos = try (0..<16).map { seed in
            let image = Image(pixels: Self.pixels(width: Self.photoWidth, height: Self.photoHeight, seed: seed))
            return [UInt8](try coders.encode(image, as: .jpeg, options: ImageEncodeOptions(quality: 0.8)))
        }
        let frames = (0..<12).map {
            ImageFrame(pixels: Self.pixels(width: 120, height: 90, seed: $0), duration: 0.08)
        }
        let animation = [UInt8](try coders.encode(Image(frames: frames, loopCount: 0), as: .gif, options: .init()))
        bodies = Bodies(photos: photos, animation: animation, bombHead: Self.pngHeader(width: 65535, height: 65535))
    }

    /// Requests answered per route so far.
    var servedCounts: [Route: Int] { served.value }

    /// Binds to a free port on 127.0.0.1 and returns the base URL.
    func start() async throws -> URL {
        let bound = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandler(Handler(server: self))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        channel.withLock { $0 = bound }
        return URL(string: "http://127.0.0.1:\(bound.localAddress?.port ?? 0)")!
    }

    func stop() async throws {
        try await channel.withLock { $0 }?.close()
        try await group.shutdownGracefully()
    }

    fileprivate func route(for uri: String) -> (Route, Int)? {
        let parts = uri.split(separator: "/")
        guard parts.count == 2, let route = Route(rawValue: String(parts[0])), let number = Int(parts[1]) else {
            return nil
        }
        served.withLock { $0[route, default: 0] += 1 }
        return (route, number)
    }

    /// A smooth colour field with rings, RGB.
    static func pixels(width: Int, height: Int, seed: Int) -> PixelBuffer {
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                let dx = Double(x - width / 2)
                let dy = Double(y - height / 2)
                let ring = (sin((dx * dx + dy * dy).squareRoot() / 14 + Double(seed)) + 1) / 2
                bytes[i] = UInt8(255 * Double(x) / Double(width - 1))
                bytes[i + 1] = UInt8(255 * Double(y) / Double(height - 1))
                bytes[i + 2] = UInt8(255 * ring)
            }
        }
        return PixelBuffer(width: width, height: height, layout: .rgb8, bytes: bytes)
    }

    /// The PNG signature and an IHDR chunk (8-bit RGBA) declaring `width` x `height`.
    static func pngHeader(width: UInt32, height: UInt32) -> [UInt8] {
        func bigEndian(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
        let ihdr: [UInt8] = Array("IHDR".utf8) + bigEndian(width) + bigEndian(height) + [8, 6, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + bigEndian(13) + ihdr + bigEndian(crc32(ihdr))
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked Sendable: NIO confines a handler to its channel's event loop; scheduled tasks run there too.
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let server: SoakServer
        var uri = ""

        init(server: SoakServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                uri = head.uri
            case .body:
                break
            case .end:
                respond(context: context)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        private func respond(context: ChannelHandlerContext) {
            guard let (route, number) = server.route(for: uri) else {
                send(context, status: .notFound, type: "text/plain", body: Array("no such route".utf8))
                return
            }
            let bodies = server.bodies
            let photo = bodies.photos[number % bodies.photos.count]
            switch route {
            case .photo:
                send(context, status: .ok, type: "image/jpeg", body: photo, extra: [("Cache-Control", "max-age=600")])
            case .anim:
                send(context, status: .ok, type: "image/gif", body: bodies.animation)
            case .garbage:
                var generator = SplitMix(seed: UInt64(number))
                send(context, status: .ok, type: "image/png", body: (0..<4096).map { _ in generator.byte() })
            case .error:
                send(context, status: .internalServerError, type: "text/html", body: Array("<h1>oops</h1>".utf8))
            case .stall:
                writeHead(context, type: "image/jpeg", length: photo.count)
            case .truncated:
                writeHead(context, type: "image/jpeg", length: photo.count)
                let channel = context.channel
                context.writeAndFlush(
                    wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: photo.prefix(photo.count / 2)))))
                )
                .whenComplete { _ in channel.close(promise: nil) }
            case .bomb:
                writeHead(context, type: "image/png", length: bodies.bombHead.count + SoakServer.bombBodyBytes)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bodies.bombHead)))), promise: nil)
                let chunk = ByteBuffer(repeating: 0, count: 64 << 10)
                for _ in 0..<(SoakServer.bombBodyBytes / chunk.readableBytes) {
                    context.write(wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil)
                }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            case .slow:
                writeHead(context, type: "image/jpeg", length: photo.count)
                context.flush()
                drip(context, parts: split(photo, into: 8), delay: .milliseconds(150))
            }
        }

        private func split(_ bytes: [UInt8], into count: Int) -> [[UInt8]] {
            let size = (bytes.count + count - 1) / count
            return stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min(bytes.count, $0 + size)]) }
        }

        private func drip(_ context: ChannelHandlerContext, parts: [[UInt8]], delay: TimeAmount) {
            guard let first = parts.first else {
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: delay) {
                let (handler, context) = loopBound.value
                guard context.channel.isActive else { return }
                context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: first)))))
                    .whenSuccess {
                        let (handler, context) = loopBound.value
                        handler.drip(context, parts: Array(parts.dropFirst()), delay: delay)
                    }
            }
        }

        private func writeHead(_ context: ChannelHandlerContext, type: String, length: Int) {
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: type)
            headers.add(name: "Content-Length", value: "\(length)")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                promise: nil)
        }

        private func send(
            _ context: ChannelHandlerContext, status: HTTPResponseStatus, type: String, body: [UInt8],
            extra: [(String, String)] = []
        ) {
            var headers = HTTPHeaders(extra)
            headers.add(name: "Content-Type", value: type)
            headers.add(name: "Content-Length", value: "\(body.count)")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}

/// A small deterministic generator (SplitMix64), so a soak run can be replayed from its seed.
struct SplitMix: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
}
