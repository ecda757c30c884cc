import NIOCore
import NIOPosix
import NIOSSL

/// What every connection to one server (or to every node of a cluster) is made with.
struct RedisConnectionOptions: Sendable {
    var username: String?
    var password: String?
    var database = 0
    var preferRESP3 = true
    var clientName: String?
    /// The TLS context for `rediss://`, made once (it is costly) and shared by every connection.
    var tls: NIOSSLContext?
    /// The name checked against the server's certificate and sent as SNI; nil uses the endpoint's host.
    var tlsServerName: String?
    var connectTimeout: TimeAmount = .seconds(1)
    var commandTimeout: TimeAmount = .milliseconds(250)
    var decoderLimits = RESPDecoder.Limits()

    var handshake: RedisConnectionStateMachine.Handshake {
        RedisConnectionStateMachine.Handshake(
            username: username, password: password, database: database, preferRESP3: preferRESP3,
            clientName: clientName)
    }
}

/// One open, handshaken connection: a NIO channel whose ``RedisChannelHandler`` pipelines commands.
///
/// Threading: thread-safe; `send` may be called from any thread (the write hops to the channel's event loop).
final class RedisConnection: Sendable {
    let endpoint: RedisEndpoint
    let channel: any Channel
    /// 3 when `HELLO 3` succeeded, else 2.
    let protocolVersion: Int
    private let load: RedisConnectionLoad
    private let commandTimeout: TimeAmount

    private init(
        endpoint: RedisEndpoint, channel: any Channel, protocolVersion: Int, load: RedisConnectionLoad,
        commandTimeout: TimeAmount
    ) {
        self.endpoint = endpoint
        self.channel = channel
        self.protocolVersion = protocolVersion
        self.load = load
        self.commandTimeout = commandTimeout
    }

    /// Commands written and not yet answered.
    var pendingCount: Int { load.value }

    var isActive: Bool { channel.isActive }

    /// Connects, runs TLS and the handshake; fails with `connectFailed`, `handshakeFailed` or `timedOut`.
    static func connect(
        to endpoint: RedisEndpoint, options: RedisConnectionOptions, group: any EventLoopGroup
    ) -> EventLoopFuture<RedisConnection> {
        let loop = group.next()
        let load = RedisConnectionLoad()
        let ready = loop.makePromise(of: Int.self)
        var serverName = options.tlsServerName
        if serverName == nil, case .tcp(let host, _) = endpoint, !Self.isIPAddress(host) { serverName = host }
        let tlsServerName = serverName
        // ClientBootstrap turns TCP_NODELAY on by default (and leaves it off for unix sockets).
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(options.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls = options.tls {
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: tlsServerName))
                    }
                    try pipeline.addHandler(
                        ByteToMessageHandler(RESPByteDecoder(decoder: RESPDecoder(limits: options.decoderLimits))))
                    try pipeline.addHandler(
                        RedisChannelHandler(
                            handshake: options.handshake, connectTimeout: options.connectTimeout, load: load,
                            ready: ready))
                }
            }
        let connected: EventLoopFuture<any Channel>
        switch endpoint {
        case .tcp(let host, let port): connected = bootstrap.connect(host: host, port: port)
        case .unix(let path): connected = bootstrap.connect(unixDomainSocketPath: path)
        }
        return connected.flatMapErrorThrowing { error in
            ready.fail(RedisClientError(.connectFailed, "\(endpoint): \(error)"))
            throw RedisClientError(.connectFailed, "\(endpoint): \(error)")
        }.flatMap { channel in
            ready.futureResult.map { version in
                RedisConnection(
                    endpoint: endpoint, channel: channel, protocolVersion: version, load: load,
                    commandTimeout: options.commandTimeout)
            }.flatMapError { error in
                channel.close(promise: nil)
                return loop.makeFailedFuture(error)
            }
        }
    }

    /// Writes `commands` together and completes with their replies in order (server error replies included as
    /// ``RESPValue/error(_:)``); fails with `timedOut`, `connectionClosed` or `protocolViolation`.
    func send(_ commands: [RedisCommand], timeout: TimeAmount? = nil) -> EventLoopFuture<[RESPValue]> {
        let promise = channel.eventLoop.makePromise(of: [RESPValue].self)
        let request = RedisRequest(commands: commands, timeout: timeout ?? commandTimeout, promise: promise)
        channel.writeAndFlush(request).whenFailure { error in
            promise.fail(RedisClientError(.connectionClosed, "write: \(error)"))
        }
        return promise.futureResult
    }

    /// Closes the channel; commands in flight fail with `unavailable`.
    func close() { channel.close(promise: nil) }

    private static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}
