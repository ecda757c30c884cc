import Hummingbird
import Logging
import Synchronization

/// The Prometheus listener: `GET /metrics` in the text exposition format, on its own address and port so it can
/// stay off the public interface.
enum MetricsEndpoint {
    /// The listener as an application (a service the server's application runs beside its own listener).
    static func application(
        metrics: ServerMetrics, host: String, port: Int, logger: Logger, onRunning: @escaping @Sendable (Int) -> Void
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.render())))
        }
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in onRunning(channel.localAddress?.port ?? port) }, logger: logger)
    }
}

/// The port the metrics listener bound (known once it runs; the configured port may be 0). Thread-safe.
public final class MetricsPort: Sendable {
    private let port = Mutex<Int?>(nil)

    init() {}

    /// The bound port, or nil before the listener runs (or without one).
    public var value: Int? { port.withLock { $0 } }

    func set(_ value: Int) { port.withLock { $0 = value } }
}
