import Foundation
import HTTPLoader
import ImageCore
import Synchronization
import ThumbnailQuery

/// Fetches a source from its origin under the source policy, on every hop.
///
/// Per hop: the host must be on the ``ThumbnailQuery/HostAllowlist``; a name is resolved once (``HostResolver``)
/// and every address it has must pass the ``ThumbnailQuery/AddressPolicy`` (an IP literal is checked as is);
/// then the request goes through the client pinned to the first of those addresses (``OriginClients``), so it
/// connects to exactly what was checked. Redirects are followed here, at most `maxRedirects`, each `Location`
/// parsed by the same strict ``ThumbnailQuery/SourceURL`` grammar and checked the same way; a loop is refused.
///
/// Errors: ``SourceRefusal`` for anything the policy refuses (the route answers 403), the resolver's error for a
/// name that does not resolve, and the SDK loader's ``ImageError`` for the transfer. Thread-safe.
struct OriginFetcher: Sendable {
    let allowlist: HostAllowlist
    let addressPolicy: AddressPolicy
    let resolver: any HostResolver
    let clients: OriginClients
    let maxRedirects: Int
    /// Called once per request sent to an origin (each redirect hop counts).
    let onRequest: @Sendable () -> Void

    /// The bytes and response of `source`, after redirects.
    func fetch(_ source: SourceURL) async throws -> LoadedImageData {
        var url = source
        var visited: Set<String> = [source.canonical]
        var hops = 0
        while true {
            let pin = try await check(url)
            let loaded = try await request(url, pin: pin)
            guard let status = loaded.response.statusCode, [301, 302, 303, 307, 308].contains(status) else {
                return loaded
            }
            guard hops < maxRedirects else { throw SourceRefusal("more than \(maxRedirects) redirects") }
            guard let location = loaded.response.headers["location"], !location.isEmpty,
                let target = URL(string: location, relativeTo: try url.foundationURL())?.absoluteString
            else { throw SourceRefusal("a redirect without a usable Location") }
            let next: SourceURL
            do throws(SourceURL.Invalid) {
                next = try SourceURL(target)
            } catch {
                throw SourceRefusal("redirect to \(target.prefix(200)) refused: \(error.message)")
            }
            guard visited.insert(next.canonical).inserted else { throw SourceRefusal("redirect loop at \(next)") }
            url = next
            hops += 1
        }
    }

    /// The pin for `url`: allowlisted host, every resolved address allowed.
    func check(_ url: SourceURL) async throws -> OriginClients.Pin {
        guard allowlist.allows(url) else {
            throw SourceRefusal("\(url.scheme)://\(url.hostForURL):\(url.port) is not on the source allowlist")
        }
        let addresses: [IPAddress]
        if let literal = url.literalAddress {
            addresses = [literal]
        } else {
            addresses = try await resolver.resolve(url.host)
        }
        guard let first = addresses.first else { throw SourceRefusal("\(url.host) has no address") }
        for address in addresses {
            if let refusal = addressPolicy.refusal(for: address) {
                throw SourceRefusal("\(url.host) resolves to \(refusal)", publicMessage: "its address is not allowed")
            }
        }
        return OriginClients.Pin(scheme: url.scheme, host: url.host, port: url.port, address: first)
    }

    private func request(_ url: SourceURL, pin: OriginClients.Pin) async throws -> LoadedImageData {
        let foundationURL: URL
        do throws(SourceURL.Invalid) {
            foundationURL = try url.foundationURL()
        } catch {
            throw SourceRefusal(error.message)
        }
        let lease = try clients.acquire(pin)
        defer { clients.release(lease) }
        onRequest()
        let operation = OperationBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let started = lease.loader.requestImage(
                    with: foundationURL, options: [], context: ImageContext(), progress: nil
                ) { result in
                    continuation.resume(with: result.mapError { $0 as any Error })
                }
                operation.set(started)
            }
        } onCancel: {
            operation.cancel()
        }
    }
}

/// A source the policy refuses: host not allowed, an address that is not public, a bad redirect.
struct SourceRefusal: Error, CustomStringConvertible {
    /// Why, in full (for the log).
    let description: String
    /// What the client is told: never an address a name resolved to, which would let anyone map internal names.
    let publicMessage: String

    init(_ description: String, publicMessage: String? = nil) {
        self.description = description
        self.publicMessage = publicMessage ?? description
    }
}

/// Holds a loader operation so a cancellation that arrives before or after it started reaches it once.
private final class OperationBox: Sendable {
    private struct State {
        var operation: (any ImageOperation)?
        var cancelled = false
    }
    private let state = Mutex(State())

    func set(_ operation: any ImageOperation) {
        let cancelNow = state.withLock { state -> Bool in
            state.operation = operation
            return state.cancelled
        }
        if cancelNow { operation.cancel() }
    }

    func cancel() {
        let operation = state.withLock { state -> (any ImageOperation)? in
            state.cancelled = true
            return state.operation
        }
        operation?.cancel()
    }
}
