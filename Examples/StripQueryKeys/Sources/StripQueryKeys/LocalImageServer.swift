import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A tiny HTTP/1.1 server on 127.0.0.1 that serves fixed files by path (ignoring the query) and counts requests.
///
/// It stands in for a CDN that signs its URLs: any `?token=…` is accepted and the same bytes come back.
final class LocalImageServer: Sendable {
    private let files: [String: (body: Data, contentType: String)]
    private let requestLog = Mutex<[String]>([])
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel = Mutex<(any Channel)?>(nil)

    init(files: [String: (body: Data, contentType: String)]) { self.files = files }

    /// The request URIs received so far, in order.
    var requests: [String] { requestLog.withLock { $0 } }

    /// Binds to a free port on 127.0.0.1 and returns the server's base URL.
    func start() async throws -> URL {
        let bound = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(server: self))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        channel.withLock { $0 = bound }
        return URL(string: "http://127.0.0.1:\(bound.localAddress?.port ?? 0)")!
    }

    /// Closes the listening socket and stops the event loop.
    func stop() async throws {
        try await channel.withLock { $0 }?.close()
        try await group.shutdownGracefully()
    }

    fileprivate func respond(to uri: String) -> (HTTPResponseStatus, Data, String) {
        requestLog.withLock { $0.append(uri) }
        let path = String(uri.prefix { $0 != "?" })
        guard let file = files[path] else { return (.notFound, Data("not found\n".utf8), "text/plain") }
        return (.ok, file.body, file.contentType)
    }

    /// Answers each request once its end arrives; lives on its channel's event loop.
    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        private let server: LocalImageServer
        private var uri = "/"

        init(server: LocalImageServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                uri = head.uri
            case .body:
                break
            case .end:
                let (status, body, contentType) = server.respond(to: uri)
                let headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", "\(body.count)")])
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                    promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
