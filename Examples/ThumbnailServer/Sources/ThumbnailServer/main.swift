import ThumbnailServerApp

// Configuration comes from the environment: HOST, PORT, ALLOWED_ORIGINS, MAX_SOURCE_BYTES, MAX_SOURCE_PIXELS,
// CACHE_DIR. Stop with Ctrl-C (SIGINT) or SIGTERM.
let app = try await buildApplication(.fromEnvironment())
try await app.runService()
