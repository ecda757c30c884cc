import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// The server's span exporter: swift-otel's tracer, sending OTLP/HTTP (protobuf) to one endpoint in batches, and
/// the service that runs the batches. The service must run beside the server and stop after it: its shutdown
/// sends the spans still queued.
///
/// swift-otel's own `OTEL_*` environment variables (sampler, headers, batch delay, endpoint) apply on top of what
/// is set here, as its documentation says.
enum TracingBackend {
    /// The tracer and its service for `endpoint` (`http://collector:4318/v1/traces`), spans named for
    /// `serviceName`; swift-otel's diagnostics go to `logger`.
    ///
    /// - Throws: ``ConfigurationError`` when swift-otel rejects the settings (an endpoint it cannot use).
    static func make(
        endpoint: String, serviceName: String, logger: Logger
    ) throws -> (tracer: any Tracer, service: any Service) {
        // swift-otel takes any scheme other than https for plain HTTP; a typo would only show at the first export.
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            url.host?.isEmpty == false
        else {
            throw ConfigurationError("TRACES_ENDPOINT: an http or https URL expected, got \(endpoint.prefix(80))")
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.diagnosticLogger = .custom(logger)
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.endpoint = endpoint
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        do {
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            return (backend.factory, backend.service)
        } catch {
            throw ConfigurationError("TRACES_ENDPOINT: \(error)")
        }
    }
}
