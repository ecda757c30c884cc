import Dispatch
import Foundation
import ImageServiceQuery
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns a host name into the addresses the server may connect to.
///
/// The server resolves each source host once per request hop, checks every address against the
/// ``/ImageServiceQuery/AddressPolicy``, and connects to exactly the address it checked (`OriginClients`), so a DNS
/// answer that changes between the check and the connection (rebinding) can't move the connection.
/// Implementations must be thread-safe.
public protocol HostResolver: Sendable {
    /// The addresses of `host` (a DNS name, never an IP literal), in preference order.
    ///
    /// - Throws: any error when the name does not resolve.
    func resolve(_ host: String) async throws -> [IPAddress]
}

/// The system resolver (`getaddrinfo`, so `/etc/hosts` and the configured DNS servers), run on a Dispatch queue,
/// never on the cooperative pool or an event loop; answers are kept ``ttl`` seconds.
///
/// `getaddrinfo` does not report the DNS TTL, so the cache uses a fixed, short one. Thread-safe.
public final class SystemResolver: HostResolver {
    /// A name that did not resolve.
    public struct Failure: Error, CustomStringConvertible {
        /// The `getaddrinfo` error text.
        public let description: String
    }

    private struct Cached {
        let addresses: [IPAddress]
        let expires: ContinuousClock.Instant
    }

    /// Seconds an answer is reused.
    public let ttl: Double
    private let cache = Mutex<[String: Cached]>([:])
    private static let queue = DispatchQueue(label: "thumbnail-server.resolver", attributes: .concurrent)

    /// Creates a resolver whose answers are reused for `ttl` seconds (0: never).
    public init(ttl: Double = 30) {
        self.ttl = ttl
    }

    public func resolve(_ host: String) async throws -> [IPAddress] {
        let now = ContinuousClock.now
        if ttl > 0, let hit = cache.withLock({ $0[host] }), hit.expires > now { return hit.addresses }
        let addresses = try await withCheckedThrowingContinuation { continuation in
            Self.queue.async { continuation.resume(with: Result { try Self.lookUp(host) }) }
        }
        if ttl > 0 {
            cache.withLock { cache in
                if cache.count > 4096 { cache.removeAll() }
                cache[host] = Cached(addresses: addresses, expires: now.advanced(by: .milliseconds(Int(ttl * 1000))))
            }
        }
        return addresses
    }

    static func lookUp(_ host: String) throws -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            throw Failure(description: "\(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var result: [IPAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            if let address = current.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    let value = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
                    }
                    result.append(.v4(value))
                case AF_INET6:
                    let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                    }
                    result.append(.v6(bytes))
                default:
                    break
                }
            }
            node = current.pointee.ai_next
        }
        var seen = Set<IPAddress>()
        return result.filter { seen.insert($0).inserted }
    }
}

/// A resolver with fixed answers, for tests and for pinning names in configuration; each call may answer
/// differently (`answers` is consumed in order, the last answer repeating). Thread-safe.
public final class StaticResolver: HostResolver {
    private let table: Mutex<[String: [[IPAddress]]]>
    private let calls = Mutex<[String: Int]>([:])

    /// Creates a resolver answering `answers[host]` in turn: the first call gets the first list, and so on.
    public init(_ answers: [String: [[IPAddress]]]) {
        table = Mutex(answers)
    }

    /// How many times `host` was resolved.
    public func callCount(_ host: String) -> Int { calls.withLock { $0[host, default: 0] } }

    public func resolve(_ host: String) async throws -> [IPAddress] {
        let call = calls.withLock { calls in
            defer { calls[host, default: 0] += 1 }
            return calls[host, default: 0]
        }
        guard let answers = table.withLock({ $0[host] }), !answers.isEmpty else {
            throw SystemResolver.Failure(description: "\(host): unknown name")
        }
        return answers[min(call, answers.count - 1)]
    }
}
