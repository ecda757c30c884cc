import ThumbnailServerApp

// Configuration comes from the environment: HOST, PORT, ALLOWED_ORIGINS, MAX_SOURCE_BYTES, MAX_SOURCE_PIXELS,
// CACHE_DIR, REDIS_URL; and `--redis URL` on the command line (a Redis shared by every replica). Stop with Ctrl-C
// (SIGINT) or SIGTERM.
let app = try await buildApplication(.fromEnvironment())
try await app.runService()
