import NIOCore
import Synchronization

/// Connections to one Redis server: the thin locked shell around ``ConnectionPoolState``.
///
/// Commands are pipelined over at most `capacity` connections, opened on demand, reconnected with back-off after
/// failures. Threading: thread-safe (one `Mutex`); connects and sends complete on the channels' event loops, and
/// no future is completed while the lock is held.
final class RedisConnectionPool: Sendable {
    let endpoint: RedisEndpoint
    private let options: RedisConnectionOptions
    private let group: any EventLoopGroup
    private let clock: @Sendable () -> Double
    private let random: @Sendable () -> Double

    private struct Shell {
        var state: ConnectionPoolState
        var connections: [ConnectionPoolState.ConnectionID: RedisConnection] = [:]
        var waiters: [EventLoopPromise<RedisConnection>] = []
        var nextID = 0
    }

    private let shell: Mutex<Shell>

    init(
        endpoint: RedisEndpoint, options: RedisConnectionOptions, capacity: Int, backoff: Backoff,
        group: any EventLoopGroup, clock: @escaping @Sendable () -> Double,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.endpoint = endpoint
        self.options = options
        self.group = group
        self.clock = clock
        self.random = random
        self.shell = Mutex(Shell(state: ConnectionPoolState(capacity: capacity, backoff: backoff)))
    }

    /// Sends `commands` together on one connection (so `ASKING` + command stay paired) and returns the replies.
    ///
    /// `timeout` (default: the command timeout) bounds the whole call, waiting for a connection included; a
    /// connect still running then carries on for later calls.
    func send(_ commands: [RedisCommand], timeout: TimeAmount? = nil) -> EventLoopFuture<[RESPValue]> {
        let timeout = timeout ?? options.commandTimeout
        let connection = connection()
        let loop = connection.eventLoop
        let promise = loop.makePromise(of: [RESPValue].self)
        let timer = loop.scheduleTask(in: timeout) {
            promise.fail(RedisClientError(.timedOut, "no reply from \(self.endpoint) within \(timeout)"))
        }
        connection.flatMap { $0.send(commands, timeout: timeout) }.whenComplete { result in
            timer.cancel()
            promise.completeWith(result)
        }
        return promise.futureResult
    }

    /// An open connection, opening one if needed.
    func connection() -> EventLoopFuture<RedisConnection> {
        let now = clock()
        enum Next {
            case use(RedisConnection)
            case useAndConnect(RedisConnection)
            case connectAndWait(EventLoopFuture<RedisConnection>)
            case wait(EventLoopFuture<RedisConnection>)
            case reject(RedisClientError)
        }
        let next = shell.withLock { shell -> Next in
            // A connection whose channel closed may not have reported it yet: never hand it out.
            for (id, connection) in shell.connections where !connection.isActive {
                shell.state.closed(id)
                shell.connections[id] = nil
            }
            let action = shell.state.lease(now: now) { id in shell.connections[id]?.pendingCount ?? Int.max }
            switch action {
            case .use(let id), .useAndConnect(let id):
                // The state lists only ids whose connection is stored (both change under this lock).
                guard let connection = shell.connections[id] else {
                    shell.state.closed(id)
                    return .reject(RedisClientError(.connectionClosed, "connection \(id) vanished"))
                }
                return action == .use(id) ? .use(connection) : .useAndConnect(connection)
            case .connectAndWait, .wait:
                let promise = group.any().makePromise(of: RedisConnection.self)
                shell.waiters.append(promise)
                return action == .wait ? .wait(promise.futureResult) : .connectAndWait(promise.futureResult)
            case .reject(let error): return .reject(error)
            }
        }
        switch next {
        case .use(let connection):
            return connection.channel.eventLoop.makeSucceededFuture(connection)
        case .useAndConnect(let connection):
            startConnect()
            return connection.channel.eventLoop.makeSucceededFuture(connection)
        case .connectAndWait(let future):
            startConnect()
            return future
        case .wait(let future):
            return future
        case .reject(let error):
            return group.any().makeFailedFuture(error)
        }
    }

    private func startConnect() {
        RedisConnection.connect(to: endpoint, options: options, group: group).whenComplete { result in
            switch result {
            case .success(let connection):
                let (waiters, keep, id) = self.shell.withLock {
                    shell -> ([EventLoopPromise<RedisConnection>], Bool, ConnectionPoolState.ConnectionID) in
                    let id = shell.nextID
                    shell.nextID += 1
                    shell.state.connected(id)
                    let keep = !shell.state.isShutdown
                    if keep { shell.connections[id] = connection }
                    defer { shell.waiters = [] }
                    return (shell.waiters, keep, id)
                }
                // Registered outside the lock: an already-closed channel runs the callback inline.
                connection.channel.closeFuture.whenComplete { _ in self.connectionClosed(id) }
                if keep {
                    for waiter in waiters { waiter.succeed(connection) }
                } else {
                    connection.close()
                    for waiter in waiters { waiter.fail(RedisClientError(.unavailable, "client shut down")) }
                }
            case .failure(let error):
                let now = self.clock()
                let unit = self.random()
                let waiters = self.shell.withLock { shell -> [EventLoopPromise<RedisConnection>] in
                    shell.state.connectFailed(now: now, unit: unit)
                    defer { shell.waiters = [] }
                    return shell.waiters
                }
                let failure = error as? RedisClientError ?? RedisClientError(.connectFailed, "\(error)")
                for waiter in waiters { waiter.fail(failure) }
            }
        }
    }

    private func connectionClosed(_ id: ConnectionPoolState.ConnectionID) {
        shell.withLock { shell in
            shell.state.closed(id)
            shell.connections[id] = nil
        }
    }

    /// Open connections (tests and metrics).
    var openConnectionCount: Int { shell.withLock { $0.state.open.count } }

    /// Closes every connection; later sends fail with `unavailable`.
    func shutdown() {
        let connections = shell.withLock { shell -> [RedisConnection] in
            let ids = shell.state.shutdown()
            return ids.compactMap { shell.connections.removeValue(forKey: $0) }
        }
        for connection in connections { connection.close() }
    }
}
