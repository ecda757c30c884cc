import Foundation
import HTTPLoader
import ImageCore
import ImageServiceQuery
import Synchronization

/// Fetches a source from its origin under the source policy, on every hop, within the request's deadline.
///
/// Per hop: the host must be on the ``ImageServiceQuery/HostAllowlist``; a name is resolved once
/// (``HostResolver``) and every address it has must pass the ``ImageServiceQuery/AddressPolicy`` (an IP literal
/// is checked as is); then the request goes through the client pinned to the first of those addresses
/// (``OriginClients``), so it connects to exactly what was checked. Redirects are followed here, at most
/// `maxRedirects`, each `Location` parsed by the same strict ``ImageServiceQuery/SourceURL`` grammar and checked
/// the same way; a loop fails. Each hop's transfer is bounded by what is left of the deadline (and by
/// ``originTimeout``), so redirects can't stretch a fetch past it; a cancelled task cancels the transfer and the
/// DNS wait at once. The hops are returned as the bytes' ``ImageServiceQuery/SourceProvenance``.
///
/// With `validators`, the request is conditional (`If-None-Match`, `If-Modified-Since`) and a 304 is
/// ``Outcome/notModified(_:provenance:)``.
///
/// Errors: ``SourceRefusal`` for anything the policy refuses (403), ``OriginFault`` for redirects that lead nowhere,
/// an empty body and a name without addresses (502), the resolver's error for a name that does not resolve, and the SDK loader's
/// ``ImageCore/ImageError`` for the transfer. Thread-safe.
struct OriginFetcher: Sendable {
    /// What a fetch ended with.
    enum Outcome: Sendable {
        /// The source's bytes and the final response.
        case loaded(LoadedImageData, provenance: SourceProvenance)
        /// The origin said the cached copy is current (304); its response, when the loader kept it.
        case notModified(ResponseMetadata?, provenance: SourceProvenance)
    }

    /// The validators of a cached copy.
    struct Validators: Sendable {
        var etag: String?
        var lastModified: String?
    }

    let policy: SourcePolicy
    let resolver: any HostResolver
    let clients: OriginClients
    let maxRedirects: Int
    /// The most one hop may take (the deadline may cut it shorter).
    let originTimeout: Double
    /// Called once per request sent to an origin (each redirect hop counts), and when it ends.
    let onRequest: @Sendable () -> Void
    let onRequestEnded: @Sendable () -> Void

    /// The bytes and response of `source`, after redirects.
    func fetch(_ source: SourceURL, validators: Validators?, deadline: Deadline) async throws -> Outcome {
        var url = source
        var visited: Set<String> = [source.canonical]
        var hops: [SourceProvenance.Hop] = []
        while true {
            let pin = try await check(url)
            hops.append(.init(scheme: pin.scheme, host: pin.host, port: pin.port, address: pin.address.description))
            let provenance = SourceProvenance(hops: hops)
            let loaded: LoadedImageData
            do {
                loaded = try await request(url, pin: pin, validators: validators, deadline: deadline)
            } catch let error as ImageError where error.code == .cacheNotModified {
                return .notModified(error.response, provenance: provenance)
            }
            guard let status = loaded.response.statusCode, [301, 302, 303, 307, 308].contains(status) else {
                // An origin that answers success with no bytes broke the fetch (a file being written, a truncating
                // proxy): 502 like any origin fault, not 415 as if the client had sent something unusable.
                guard !loaded.data.isEmpty else { throw OriginFault("an empty body") }
                return .loaded(loaded, provenance: provenance)
            }
            guard hops.count <= maxRedirects else { throw OriginFault("more than \(maxRedirects) redirects") }
            guard let location = loaded.response.headers["location"], !location.isEmpty,
                let target = URL(string: location, relativeTo: try url.foundationURL())?.absoluteString
            else { throw OriginFault("a redirect without a usable Location") }
            let next: SourceURL
            do throws(SourceURL.Invalid) {
                next = try SourceURL(target)
            } catch {
                throw SourceRefusal("redirect to \(target.prefix(200)) refused: \(error.message)")
            }
            guard visited.insert(next.canonical).inserted else { throw OriginFault("a redirect loop") }
            url = next
        }
    }

    /// The pin for `url`: allowlisted host, every resolved address allowed.
    func check(_ url: SourceURL) async throws -> OriginClients.Pin {
        if let refusal = policy.refusal(for: url) { throw SourceRefusal(refusal) }
        let addresses: [IPAddress]
        if let literal = url.literalAddress {
            addresses = [literal]
        } else {
            // getaddrinfo can't be stopped: the request stops waiting for it at cancellation.
            let resolver = resolver
            let host = url.host
            addresses = try await cancellableWait { finish in
                let task = Task { finish(await Result.capturing { try await resolver.resolve(host) }) }
                return { task.cancel() }
            }
        }
        guard let first = addresses.first else { throw OriginFault("\(url.host) has no address") }
        for address in addresses {
            if let refusal = policy.addresses.refusal(for: address) {
                throw SourceRefusal("\(url.host) resolves to \(refusal)", publicMessage: "its address is not allowed")
            }
        }
        return OriginClients.Pin(scheme: url.scheme, host: url.host, port: url.port, address: first)
    }

    private func request(_ url: SourceURL, pin: OriginClients.Pin, validators: Validators?, deadline: Deadline)
        async throws -> LoadedImageData
    {
        let foundationURL: URL
        do throws(SourceURL.Invalid) {
            foundationURL = try url.foundationURL()
        } catch {
            throw SourceRefusal(error.message)
        }
        let remaining = deadline.remaining
        guard remaining > 0 else { throw DeadlineExceeded() }
        try Task.checkCancellation()
        let lease = try clients.acquire(pin)
        var context = ImageContext()
        context.httpTransferTimeout = min(originTimeout, remaining)
        var options: ImageOptions = []
        if let validators {
            options.insert(.refreshCached)
            context.loaderCachedMetadata = CacheEntryMetadata(
                etag: validators.etag, lastModified: validators.lastModified)
        }
        onRequest()
        let clients = clients
        let ended = onRequestEnded
        return try await cancellableWait { finish in
            // The transfer counts as in flight, and holds its client, until the loader says it ended (after a
            // cancel too), not merely until this request stopped waiting for it.
            let operation = lease.loader.requestImage(
                with: foundationURL, options: options, context: context, progress: nil
            ) { result in
                clients.release(lease)
                ended()
                finish(result.mapError { $0 as any Error })
            }
            return { operation.cancel() }
        }
    }
}

/// A source the policy refuses: host not allowed, an address that is not public, a redirect to a URL the source
/// grammar refuses. Answered 403: asking again gets the same answer.
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

/// An origin that failed the fetch without a policy being involved: redirects that lead nowhere (no usable
/// `Location`, a loop, more than the allowed hops), an answer without a body, or a name with no address. Answered 502, as a transfer the origin
/// broke is: the fault is upstream, and a fixed origin is fetched again (nothing is cached).
struct OriginFault: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
