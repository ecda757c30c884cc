import Foundation
import ImageService
import Logging
import Vapor
import VaporThumbnailsApp

// `vapor-thumbnails serve [--hostname H] [--port P]`. The service's settings come from the environment:
// SIGNING_KEYS (comma-separated), or ALLOW_UNSIGNED=1; ALLOWED_HOSTS; ALLOWED_ADDRESSES; CACHE_DIR.
var environment = try Environment.detect()
try LoggingSystem.bootstrap(from: &environment)
let app = try await Application.make(environment)
let variables = ProcessInfo.processInfo.environment
func list(_ name: String) -> [String] {
    (variables[name] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}
var settings = ImageServiceConfiguration()
settings.signingKeys = list("SIGNING_KEYS")
settings.allowUnsigned = variables["ALLOW_UNSIGNED"] == "1"
settings.allowedHosts = list("ALLOWED_HOSTS")
settings.allowedAddresses = list("ALLOWED_ADDRESSES")
settings.cacheDirectory = variables["CACHE_DIR"].map { URL(fileURLWithPath: $0, isDirectory: true) }
settings.logger = app.logger
do {
    let service = try ImageService(configuration: settings)
    configure(app, service: service)
    try await app.execute()
    try await app.asyncShutdown()
} catch {
    app.logger.report(error: error)
    try? await app.asyncShutdown()
    exit(1)
}
