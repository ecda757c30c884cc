import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import WebImage

/// A tiny static HTTP server on 127.0.0.1 that serves the demo's generated images and counts requests.
final class SampleServer: Sendable {
    private let files: [String: (Data, String)]
    private let hits = Locked(0)
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel: Locked<(any Channel)?> = Locked(nil)

    init(files: [String: (Data, String)]) { self.files = files }

    /// Requests answered so far.
    var requestCount: Int { hits.value }

    /// Binds to a free port and returns the base URL.
    func start() async throws -> URL {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(Handler(server: self))
                }
            }
        let bound = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        channel.withLock { $0 = bound }
        return URL(string: "http://127.0.0.1:\(bound.localAddress?.port ?? 0)")!
    }

    func stop() async throws {
        try await channel.withLock { $0 }?.close()
        try await group.shutdownGracefully()
    }

    fileprivate func response(for path: String) -> (HTTPResponseStatus, Data, String) {
        hits.withLock { $0 += 1 }
        guard let (data, type) = files[path] else { return (.notFound, Data("not found".utf8), "text/plain") }
        return (.ok, data, type)
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        // @unchecked Sendable: NIO confines a handler to its channel's event loop.
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let server: SampleServer
        var path = ""

        init(server: SampleServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                path = head.uri
            case .body:
                break
            case .end:
                let (status, body, type) = server.response(for: path)
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: type)
                headers.add(name: "Content-Length", value: "\(body.count)")
                headers.add(name: "ETag", value: "\"\(body.count)\"")
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                    promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
