import Foundation
import ImageService
import Vapor

/// Sets up `app`: its own routes (`GET /`, `GET /hello/:name`) and the thumbnail service mounted at
/// `GET /img/thumbnail` (and `HEAD`), with the limits Vapor offers on connections and the framing refusals
/// (``FramingMiddleware``) on every route.
///
/// Vapor 4.122 has an idle timeout (`idleTimeout`: a connection with no read or write for that long is closed —
/// half-sent requests included), a shutdown timeout (connections still open that long after shutdown began are
/// closed) and a listen backlog, raised here from 256 to 4096 (the kernel caps it at `net.core.somaxconn`) so that
/// a burst of connects while the accept loop is busy is held rather than answered with dropped SYNs. It has no
/// connection cap, header timeout separate from idle, or bound on a non-reading client's output. The
/// ThumbnailServer example (Hummingbird) shows those; the request-level limits (one deadline per request, admission
/// with 429, the source policy, freshness) are the service's and hold here as there.
public func configure(_ app: Application, service: ImageService, idleTimeout: Double = 10) {
    app.http.server.configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
    app.http.server.configuration.shutdownTimeout = .milliseconds(
        Int64(service.configuration.requestTimeout * 1000))
    app.http.server.configuration.backlog = 4096
    // First: a request the server can't take as framed reaches no route.
    app.middleware.use(FramingMiddleware(), at: .beginning)
    app.get { _ in "An app with its own routes, and thumbnails under /img/thumbnail.\n" }
    app.get("hello", ":name") { request in "Hello, \(request.parameters.get("name") ?? "you").\n" }
    let responder = ImageServiceResponder(service: service)
    let images = app.grouped("img")
    images.get("thumbnail") { request in try await responder.respond(to: request) }
    images.on(.HEAD, "thumbnail") { request in try await responder.respond(to: request) }
    // Other methods reach the service too, which answers 405 with `Allow` (the router alone would say 404).
    for method in [HTTPMethod.POST, .PUT, .PATCH, .DELETE, .OPTIONS] {
        images.on(method, "thumbnail") { request in try await responder.respond(to: request) }
    }
    app.lifecycle.use(ServiceShutdown(service: service))
}

/// Closes the service's origin clients and Redis connections when the app shuts down.
struct ServiceShutdown: LifecycleHandler {
    let service: ImageService

    func shutdownAsync(_ application: Application) async {
        await service.shutdown()
    }
}
