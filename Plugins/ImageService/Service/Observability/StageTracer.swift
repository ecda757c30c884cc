import HTTPTypes
import Synchronization
import Tracing

/// Spans for the stages of a request (swift-distributed-tracing): `image_service.request` (server kind) around
/// everything, and inside it `fetch`, `decode`, `transform`, `encode`, `store` and `cache.lookup`, each a child
/// of the one it runs in, with attributes saying what happened (`cache.kind`, `cache.level` — `memory`, `disk`,
/// `redis` or `miss` —, `http.response.status_code`, sizes). The trace context of the client's request
/// (`traceparent`…) is extracted by the process's instrument, so a fleet's requests can be followed through
/// every replica. Thread-safe.
struct StageTracer: Sendable {
    let tracer: any Tracer

    /// Runs `body` inside a span named `name`, ended when it returns; an error is recorded on the span.
    func span<T: Sendable>(
        _ name: String, kind: SpanKind = .internal, _ body: (any Span) async throws -> T
    ) async throws -> T {
        let span = tracer.startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: kind)
        defer { span.end() }
        do {
            return try await ServiceContext.withValue(span.context) { try await body(span) }
        } catch {
            span.recordError(error)
            throw error
        }
    }

    /// ``span(_:kind:_:)`` for a body that can't fail.
    func spanning<T: Sendable>(_ name: String, _ body: (any Span) async -> T) async -> T {
        let span = tracer.startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: .internal)
        defer { span.end() }
        return await ServiceContext.withValue(span.context) { await body(span) }
    }

    /// ``span(_:kind:_:)`` for a synchronous body that can't fail.
    func spanSync<T>(_ name: String, _ body: (any Span) -> T) -> T {
        let span = tracer.startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: .internal)
        defer { span.end() }
        return ServiceContext.withValue(span.context) { body(span) }
    }

    /// The context of a client's request: the trace it belongs to, read from its headers.
    func context(of headers: HTTPFields) -> ServiceContext {
        var context = ServiceContext.current ?? .topLevel
        tracer.extract(headers, into: &context, using: HTTPFieldsExtractor())
        return context
    }
}

/// Reads trace headers from swift-http-types fields.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}

/// A span that starts in one task and ends in another: a stage that begins inside work shared by several requests
/// and ends when this request has its answer (the lookup ends where the work starts, the store where the answer
/// arrives). Ended once, whichever end comes first.
final class OpenSpan: Sendable {
    private let span: Mutex<(any Span)?>

    /// Starts `name` as a child of the current trace context.
    init(_ tracer: StageTracer, _ name: String, attributes: [String: SpanAttribute] = [:]) {
        let span = tracer.tracer.startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: .internal)
        for (key, value) in attributes { span.attributes[key] = value }
        self.span = Mutex(span)
    }

    /// Ends the span with `attributes`, unless it already ended.
    func end(_ attributes: [String: SpanAttribute] = [:], error: (any Error)? = nil) {
        let open = span.withLock { span -> (any Span)? in
            defer { span = nil }
            return span
        }
        guard let open else { return }
        for (key, value) in attributes { open.attributes[key] = value }
        if let error { open.recordError(error) }
        open.end()
    }
}
