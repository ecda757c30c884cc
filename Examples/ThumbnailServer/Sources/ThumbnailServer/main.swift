import Foundation
import ImageService
import Logging
import ThumbnailServerApp

#if canImport(Glibc)
    import Glibc
#endif

// `thumbnail-server [--config FILE] [--redis URL]` serves; every setting is also an environment variable (see the
// README). `thumbnail-server sign '/thumbnail?url=…&w=…'` prints that path signed with the first SIGNING_KEYS key.

// A parent may have spawned us with SIGTERM/SIGINT blocked (a test runner does): unblock them before any thread
// starts, so the graceful shutdown hears them.
var signals = sigset_t()
sigemptyset(&signals)
sigaddset(&signals, SIGTERM)
sigaddset(&signals, SIGINT)
pthread_sigmask(SIG_UNBLOCK, &signals, nil)

do {
    let configuration = try ThumbnailServerConfiguration.load()
    if CommandLine.arguments.dropFirst().first == "sign" {
        guard CommandLine.arguments.count == 3, let split = CommandLine.arguments[2].firstIndex(of: "?") else {
            throw ConfigurationError("usage: thumbnail-server sign '/thumbnail?url=…&w=…'")
        }
        let target = CommandLine.arguments[2]
        let signer = try URLSigner(encodedKeys: configuration.signingKeys)
        guard signer.keyCount > 0 else { throw ConfigurationError("sign: set SIGNING_KEYS") }
        print(signer.sign(path: String(target[..<split]), query: String(target[target.index(after: split)...])))
        exit(0)
    }
    let level = Logger.Level(rawValue: configuration.logLevel.lowercased()) ?? .info
    LoggingSystem.bootstrap { label -> any LogHandler in
        if configuration.logJSON { return JSONLogHandler(label: label, level: level) }
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
    let logger = Logger(label: "thumbnail-server")
    let server = try await ThumbnailServer(configuration, logger: logger)
    logger.info(
        "listening",
        metadata: [
            "address": "\(configuration.host):\(configuration.port)",
            "metrics": "\(configuration.metricsPort.map { "\(configuration.metricsHost):\($0)" } ?? "off")",
            "signed": "\(!configuration.signingKeys.isEmpty)", "unsigned_allowed": "\(configuration.allowUnsigned)",
        ])
    try await server.run(drainSeconds: configuration.drainSeconds, logger: logger)
} catch let error as ConfigurationError {
    FileHandle.standardError.write(Data("thumbnail-server: \(error.message)\n".utf8))
    exit(2)
}
