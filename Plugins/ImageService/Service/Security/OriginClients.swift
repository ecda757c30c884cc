import AsyncHTTPClient
import Foundation
import HTTPLoader
import ImageCore
import ImageServiceQuery
import NIOCore
import Synchronization

/// HTTP clients pinned to checked addresses: one AsyncHTTPClient (and the SDK `HTTPLoader` on it) per scheme,
/// host, port and address, whose `dnsOverride` maps the host to that address.
///
/// AsyncHTTPClient resolves host names itself when it connects, and 1.37 has no per-request resolver hook; its
/// `dnsOverride` (a client setting) is the way to say "connect to this address, but send this `Host` and verify
/// TLS (SNI, certificate) for this name". So the server resolves and checks first, then asks for the client
/// pinned to the address it checked: the connection can only go there, whatever DNS answers later. Clients are
/// kept for reuse (their connection pools stay warm) up to ``capacity``; the least recently used idle ones are
/// shut down beyond it. Redirects are off in every client: the fetcher checks each hop itself.
///
/// Thread-safe: the table is behind one `Mutex`; clients are shut down outside it.
final class OriginClients: Sendable {
    /// What a client is pinned to.
    struct Pin: Hashable, Sendable, CustomStringConvertible {
        let scheme: String
        let host: String
        let port: Int
        let address: IPAddress

        var description: String { "\(scheme)://\(host):\(port) → \(address)" }
    }

    /// A client in use; ``OriginClients/release(_:)`` gives it back.
    struct Lease: Sendable {
        let pin: Pin
        let loader: HTTPLoader
    }

    private struct Entry {
        let client: HTTPClient
        let loader: HTTPLoader
        var active: Int
        var lastUse: UInt64
    }

    private struct State {
        var entries: [Pin: Entry] = [:]
        var tick: UInt64 = 0
        var isShutdown = false
    }

    /// Clients kept at most (more exist only while all are busy).
    let capacity: Int
    private let loaderConfiguration: HTTPLoaderConfiguration
    private let connectTimeout: TimeAmount
    private let state = Mutex(State())

    init(capacity: Int, loaderConfiguration: HTTPLoaderConfiguration, connectTimeout: Double) {
        self.capacity = max(1, capacity)
        var configuration = loaderConfiguration
        // 3xx must reach the fetcher as responses: it follows (and checks) every hop itself.
        configuration.maximumRedirects = 0
        configuration.acceptableStatusCodes.formUnion([301, 302, 303, 307, 308])
        self.loaderConfiguration = configuration
        self.connectTimeout = .nanoseconds(Int64(max(0.001, connectTimeout) * 1e9))
    }

    /// Clients alive now.
    var count: Int { state.withLock { $0.entries.count } }

    /// The loader pinned to `pin`, created if needed; call ``release(_:)`` when its request ended.
    ///
    /// - Throws: `cancelled` once ``shutdown()`` began.
    func acquire(_ pin: Pin) throws(ImageError) -> Lease {
        var evicted: [Entry] = []
        let needsClient = state.withLock { $0.entries[pin] == nil && !$0.isShutdown }
        // Made outside the lock; a client made for a pin another caller created meanwhile is shut down unused.
        let made = needsClient ? makeClient(pin) : nil
        let loader: HTTPLoader? = state.withLock { state in
            guard !state.isShutdown else { return nil }
            state.tick += 1
            if state.entries[pin] == nil, let (client, loader) = made {
                state.entries[pin] = Entry(client: client, loader: loader, active: 0, lastUse: state.tick)
            }
            state.entries[pin]!.active += 1
            state.entries[pin]!.lastUse = state.tick
            while state.entries.count > capacity,
                let victim = state.entries.filter({ $0.value.active == 0 }).min(by: {
                    $0.value.lastUse < $1.value.lastUse
                })
            {
                evicted.append(state.entries.removeValue(forKey: victim.key)!)
            }
            return state.entries[pin]!.loader
        }
        if let (client, unused) = made, unused !== loader {
            evicted.append(Entry(client: client, loader: unused, active: 0, lastUse: 0))
        }
        Self.shutDown(evicted)
        guard let loader else { throw ImageError(.cancelled, stage: .download, message: "the server is shutting down") }
        return Lease(pin: pin, loader: loader)
    }

    /// Gives back a client taken with ``acquire(_:)``.
    func release(_ lease: Lease) {
        state.withLock { state in
            if state.entries[lease.pin] != nil { state.entries[lease.pin]!.active -= 1 }
        }
    }

    /// Shuts every client down (transfers still running are cancelled); later ``acquire(_:)`` calls fail.
    func shutdown() async {
        let entries = state.withLock { state in
            state.isShutdown = true
            defer { state.entries = [:] }
            return Array(state.entries.values)
        }
        for entry in entries {
            try? await entry.loader.shutdown()
            try? await entry.client.shutdown()
        }
    }

    private func makeClient(_ pin: Pin) -> (HTTPClient, HTTPLoader) {
        var configuration = HTTPClient.Configuration(
            certificateVerification: .fullVerification, redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(
                connect: connectTimeout,
                read: .nanoseconds(Int64(max(0.001, loaderConfiguration.timeout) * 1e9))),
            maximumAllowedIdleTimeInConnectionPool: .seconds(60))
        if IPAddress(pin.host) == nil {
            configuration.dnsOverride = [pin.host: pin.address.description]
        }
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(
            8, loaderConfiguration.maxConcurrentDownloads)
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        return (client, HTTPLoader(configuration: loaderConfiguration, client: client))
    }

    private static func shutDown(_ entries: [Entry]) {
        guard !entries.isEmpty else { return }
        Task {
            for entry in entries {
                try? await entry.loader.shutdown()
                try? await entry.client.shutdown()
            }
        }
    }
}
