import AVIFCoder
import ColorManagement
import Foundation
import GIFCoder
import HEIFCoder
import HTTPTypes
import ImageCore
import ImageServiceQuery
import JPEGCoder
import JXLCoder
import Logging
import PNGCoder
import Tracing
import WebPCoder

/// The thumbnail service as a library: an HTTP request in, an HTTP response out, with no web framework.
///
/// `GET <path>?url=…&w=…&h=…[&fit=…&gravity=…&dpr=…&enlarge=…&q=…&format=…&anim=…&preset=…&expires=…]&sig=…`.
/// An adapter (Hummingbird, Vapor, a bare NIO server) mounts it under any path and hands every request of that
/// path to ``respond(to:logger:)``; what the service does per request:
///
/// 1. the signature (``URLSigner``; unsigned requests only with ``ImageServiceConfiguration/allowUnsigned``): 403;
/// 2. the query (``/ImageServiceQuery/OptionsParser``): 400 naming the parameter;
/// 3. the source policy: the source's host against the allowlist — on every request, cached or not: 403;
/// 4. the format by `Accept` (``/ImageServiceQuery/ContentNegotiation``);
/// 5. under the request's one deadline (``ImageServiceConfiguration/requestTimeout``; 504, and every worker and
///    queue slot the request held given back at that moment): the result cache; a hit whose source is still fresh
///    and whose provenance the current policy allows is answered as stored; otherwise one flight per result key
///    takes a worker (``ImageServiceConfiguration/workers``, a queue of ``ImageServiceConfiguration/queueLimit``,
///    429 beyond it), gets the source (fresh from a cache, revalidated, or fetched — every origin byte inside a
///    worker), and renders, or keeps a stale result whose source did not change;
/// 6. the answer: a strong `ETag` derived from the source's validator and the options (a changed source changes
///    it), `304` for a matching `If-None-Match` (or `If-Modified-Since`), `Cache-Control` whose `max-age` never
///    exceeds what the source allows, `Vary: Accept` when negotiated.
///
/// Metrics (swift-metrics), logs (swift-log) and spans per stage (swift-distributed-tracing) go where the
/// configuration says. Limits of the connection itself (header and idle timeouts, connection caps, bounded output)
/// are the adapter's. Thread-safe: one service serves every request of a process.
public final class ImageService: Sendable {
    /// The configuration it was built with.
    public let configuration: ImageServiceConfiguration
    let signer: URLSigner
    let parser: OptionsParser
    let policy: SourcePolicy
    let engine: any ServiceEngine
    let workers: WorkerPool
    let metrics: ServiceMetrics
    let tracer: StageTracer
    let canEncodeAVIF: Bool
    /// ``EncodingSettings/fingerprint`` of the configuration: a part of every result key and entity tag.
    let rendering: String

    /// Builds the service: coders, caches, origin clients, the worker pool.
    ///
    /// The service uses its own `CodersManager`, never the shared one. It needs a colour converter and a perceptual
    /// metric, which the SDK registers per process: it registers lcms2's and butteraugli only where the process has
    /// none, so a converter or metric the host application registered stays and serves the service too.
    ///
    /// - Throws: ``ImageServiceConfigurationError`` for settings that don't make a usable service (no signing key
    ///   and unsigned requests not allowed, a bad key, allowlist entry, address block or preset, a bad Redis URL).
    public init(configuration: ImageServiceConfiguration) throws {
        self.configuration = configuration
        // One value for the renderer and the keys, so the keys name exactly the settings the renderer uses.
        let encoding = EncodingSettings(configuration)
        rendering = encoding.fingerprint
        let setup = try ServiceSetup(configuration)
        signer = setup.signer
        parser = setup.parser
        policy = setup.policy
        let metrics = ServiceMetrics(prefix: configuration.metricsPrefix, factory: configuration.metricsFactory)
        self.metrics = metrics
        tracer = StageTracer(tracer: configuration.tracer ?? InstrumentationSystem.tracer)
        let coders = CodersManager()
        for coder: any ImageCoder in [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared, HEIFCoder.shared,
        ] {
            coders.addCoder(coder)
        }
        // Sources with an ICC profile (or CMYK) are converted to sRGB at decode (SourceLimits.decodeOptions). The
        // registration is process-wide: a converter the host application registered itself stays, as the metric
        // below does (embedding the service must not change how the host's own loads convert colour).
        if ColorConversion.converter == nil { ColorConversion.register(LCMSColorConverter.shared) }
        // q=auto measures each probe with butteraugli (libjxl); a metric the process registered itself stays.
        if PerceptualQuality.metric == nil { PerceptualQuality.register(ButteraugliMetric.shared) }
        canEncodeAVIF = coders.canEncode(to: .avif)
        let workers = WorkerPool(workers: configuration.workers, queueLimit: configuration.queueLimit) {
            running, waiting in
            metrics.inFlight.record(running)
            metrics.queueDepth.record(waiting)
        }
        self.workers = workers
        engine = try PipelineEngine.make(
            configuration, policy: setup.policy, coders: coders, encoding: encoding, metrics: metrics)
    }

    /// Closes the origin clients and the Redis connections. Call it once the adapter stopped taking requests.
    public func shutdown() async {
        await engine.shutdown()
    }

    /// `path?query&sig=…` signed with the first key (for links an operator hands out: a gallery built from
    /// configuration, a CLI). Never sign what a client asked for: that would make the service a signing oracle.
    ///
    /// - Returns: nil when the service has no key.
    public func sign(path: String, query: String) -> String? {
        signer.keyCount > 0 ? signer.sign(path: path, query: query) : nil
    }

    /// Workers busy and requests waiting for one, now.
    public var load: (running: Int, waiting: Int) { workers.counts }

    /// The answer to `request`. Never throws: every failure is an answer (400, 403, 404, 405, 413, 415, 429 with
    /// `Retry-After`, 502, 503, 504), logged at `info` with its reason on `logger` (the adapter's request logger,
    /// so the line carries its request id).
    public func respond(to request: ImageServiceRequest, logger: Logger? = nil) async -> ImageServiceResponse {
        let logger = logger ?? configuration.logger
        metrics.httpInFlight.increment()
        defer { metrics.httpInFlight.decrement() }
        let context = tracer.context(of: request.headers)
        let response = await ServiceContext.withValue(context) {
            await
                (try? tracer.span("image_service.request", kind: .server) { span in
                    span.attributes["http.request.method"] = request.method.rawValue
                    span.attributes["url.path"] = request.path
                    let response = await handle(request, logger: logger)
                    span.attributes["http.response.status_code"] = response.status.code
                    return response
                }) ?? Failure(.internalServerError, "tracing failed").response()
        }
        return response
    }

    private func handle(_ request: ImageServiceRequest, logger: Logger) async -> ImageServiceResponse {
        var format = "none"
        let response: ImageServiceResponse
        do {
            guard request.method == .get || request.method == .head else {
                throw Failure(.methodNotAllowed, "GET or HEAD only")
            }
            try checkSignature(path: request.path, query: request.query)
            let options = try parser.parse(try QueryString.pairs(request.query))
            if let refusal = policy.refusal(for: options.source) {
                metrics.policyRefusal(cached: false)
                throw SourceRefusal(refusal)
            }
            let encoding = options.format.encoding(
                accept: request.headers[.accept], canEncodeAVIF: canEncodeAVIF)
            let conditional = Conditional(
                ifNoneMatch: request.headers[.ifNoneMatch], ifModifiedSince: request.headers[.ifModifiedSince])
            let deadline = Deadline(seconds: configuration.requestTimeout)
            let work = WorkContext(deadline: deadline, tracer: tracer)
            let answer = try await deadline.run {
                try await self.answer(options, encoding: encoding, conditional: conditional, work: work)
            }
            response = self.response(
                to: answer, conditional: conditional, variesByAccept: options.format.variesByAccept,
                format: &format)
        } catch {
            let failure = Failure.from(error)
            if let reason = failure.rejection { metrics.rejected(reason) }
            logger.info(
                "thumbnail refused",
                metadata: [
                    "status": .stringConvertible(failure.status.code),
                    "reason": .string(failure.detail ?? failure.message),
                ])
            response = failure.response()
        }
        metrics.request(status: response.status.code, format: format)
        return response.framed(head: request.method == .head)
    }

    /// Signed requests pass with any key; unsigned ones only when allowed (a wrong signature never passes).
    private func checkSignature(path: String, query: String) throws {
        guard signer.keyCount > 0 else {
            // No keys: a `sig` can't mean anything, and the service only starts like this with allowUnsigned.
            if configuration.allowUnsigned { return }
            throw URLSigner.Refusal.missing
        }
        let signed = query.split(separator: "&").contains { $0.hasPrefix("sig=") }
        if !signed && configuration.allowUnsigned { return }
        try signer.verify(path: path, query: query)
    }
}

/// A configuration that does not make a usable service; `message` names the setting.
public struct ImageServiceConfigurationError: Error, CustomStringConvertible {
    /// What was wrong.
    public let message: String
    /// `message`.
    public var description: String { message }

    /// Creates an error.
    public init(_ message: String) { self.message = message }
}
