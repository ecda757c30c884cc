import Foundation
import ImageCore

/// A configuration that could not be read; `message` names the setting.
public struct ConfigurationError: Error, CustomStringConvertible {
    /// What was wrong.
    public let message: String
    /// `message`.
    public var description: String { message }

    /// Creates an error with `message`.
    public init(_ message: String) { self.message = message }
}

/// One setting of ``ThumbnailServerConfiguration`` (its own or its service's), readable from the environment (`name`) and from the JSON file
/// (`key`), through one parser, so both spell values the same way.
///
/// Lists are comma-separated in the environment and arrays (or the same string) in the file; presets are
/// `name=query;name2=query` in the environment and an object in the file; qualities are `jpeg=80,webp=75`
/// or an object. Sizes with `_MB` are MiB.
struct ConfigurationSetting: Sendable {
    let name: String
    let key: String
    let apply: @Sendable (inout ThumbnailServerConfiguration, String) throws -> Void

    static func int(_ text: String, _ name: String, min: Int = 0) throws -> Int {
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= min else {
            throw ConfigurationError("\(name): an integer of at least \(min) expected, got \(text.prefix(40))")
        }
        return value
    }

    static func double(_ text: String, _ name: String) throws -> Double {
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0 else {
            throw ConfigurationError("\(name): a non-negative number expected, got \(text.prefix(40))")
        }
        return value
    }

    static func bool(_ text: String, _ name: String) throws -> Bool {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off", "": return false
        default: throw ConfigurationError("\(name): 1/0 or true/false expected, got \(text.prefix(40))")
        }
    }

    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func pairs(_ text: String, separator: Character, _ name: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for item in text.split(separator: separator) {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else {
                throw ConfigurationError("\(name): name=value expected in \(item.prefix(60))")
            }
            result[parts[0].trimmingCharacters(in: .whitespaces)] = String(parts[1])
        }
        return result
    }

    static func megabytes(_ text: String, _ name: String) throws -> Int { try int(text, name) << 20 }

    /// The formats `QUALITY` and `PERCEPTUAL_DISTANCE` name.
    static let qualityFormats: [String: ImageFormat] = ["jpeg": .jpeg, "jpg": .jpeg, "webp": .webp, "avif": .avif]

    /// The formats `EFFORT` names: every output format.
    static let effortFormats = qualityFormats.merging(["png": .png, "gif": .gif]) { old, _ in old }

    /// `EFFORT`'s values.
    static let efforts: [String: EncodeEffort] = ["fast": .fast, "balanced": .balanced, "best": .best]

    /// Every setting, in the order the README lists them.
    static let all: [ConfigurationSetting] = [
        .init(name: "HOST", key: "host") { $0.host = $1 },
        .init(name: "PORT", key: "port") { $0.port = try int($1, "PORT") },
        .init(name: "METRICS_HOST", key: "metricsHost") { $0.metricsHost = $1 },
        .init(name: "METRICS_PORT", key: "metricsPort") {
            $0.metricsPort = $1.lowercased() == "off" || $1.isEmpty ? nil : try int($1, "METRICS_PORT")
        },
        .init(name: "SIGNING_KEYS", key: "signingKeys") { $0.signingKeys = list($1) },
        .init(name: "ALLOW_UNSIGNED", key: "allowUnsigned") { $0.allowUnsigned = try bool($1, "ALLOW_UNSIGNED") },
        .init(name: "ALLOWED_HOSTS", key: "allowedHosts") { $0.allowedHosts = list($1) },
        // The earlier name of ALLOWED_HOSTS.
        .init(name: "ALLOWED_ORIGINS", key: "allowedOrigins") { $0.allowedHosts = list($1) },
        .init(name: "ALLOWED_ADDRESSES", key: "allowedAddresses") { $0.allowedAddresses = list($1) },
        .init(name: "MAX_REDIRECTS", key: "maxRedirects") { $0.maxRedirects = try int($1, "MAX_REDIRECTS") },
        .init(name: "MAX_SOURCE_BYTES", key: "maxSourceBytes") {
            $0.maxSourceBytes = try int($1, "MAX_SOURCE_BYTES", min: 1)
        },
        .init(name: "MAX_SOURCE_PIXELS", key: "maxSourcePixels") {
            $0.maxSourcePixels = try int($1, "MAX_SOURCE_PIXELS", min: 1)
        },
        .init(name: "MAX_SOURCE_FRAMES", key: "maxSourceFrames") {
            $0.maxSourceFrames = try int($1, "MAX_SOURCE_FRAMES", min: 1)
        },
        .init(name: "MAX_SIDE", key: "maxSide") { $0.maxSide = try int($1, "MAX_SIDE", min: 1) },
        .init(name: "ALLOWED_WIDTHS", key: "allowedWidths") {
            $0.allowedWidths = try list($1).map { try int($0, "ALLOWED_WIDTHS", min: 1) }
        },
        .init(name: "ALLOWED_HEIGHTS", key: "allowedHeights") {
            $0.allowedHeights = try list($1).map { try int($0, "ALLOWED_HEIGHTS", min: 1) }
        },
        .init(name: "MAX_DPR", key: "maxDPR") { $0.maxDPR = try double($1, "MAX_DPR") },
        .init(name: "ALLOW_ANIMATION", key: "allowAnimation") { $0.allowAnimation = try bool($1, "ALLOW_ANIMATION") },
        .init(name: "PRESETS", key: "presets") { $0.presets = try pairs($1, separator: ";", "PRESETS") },
        .init(name: "PRESETS_ONLY", key: "presetsOnly") { $0.presetsOnly = try bool($1, "PRESETS_ONLY") },
        .init(name: "QUALITY", key: "quality") { configuration, text in
            for (format, value) in try pairs(text, separator: ",", "QUALITY") {
                guard let imageFormat = qualityFormats[format.lowercased()] else {
                    throw ConfigurationError("QUALITY: jpeg, webp or avif expected, got \(format)")
                }
                configuration.setQuality(try int(value, "QUALITY", min: 1), for: imageFormat)
            }
        },
        .init(name: "EFFORT", key: "effort") { configuration, text in
            for (format, value) in try pairs(text, separator: ",", "EFFORT") {
                guard let imageFormat = effortFormats[format.lowercased()] else {
                    throw ConfigurationError("EFFORT: jpeg, png, webp, avif or gif expected, got \(format)")
                }
                guard let effort = efforts[value.lowercased().trimmingCharacters(in: .whitespaces)] else {
                    throw ConfigurationError("EFFORT: fast, balanced or best expected, got \(value.prefix(20))")
                }
                configuration.service.effort[imageFormat] = effort
            }
        },
        .init(name: "PERCEPTUAL_DISTANCE", key: "perceptualDistance") { configuration, text in
            for (format, value) in try pairs(text, separator: ",", "PERCEPTUAL_DISTANCE") {
                guard let imageFormat = qualityFormats[format.lowercased()] else {
                    throw ConfigurationError("PERCEPTUAL_DISTANCE: jpeg, webp or avif expected, got \(format)")
                }
                let distance = try double(value, "PERCEPTUAL_DISTANCE")
                guard distance > 0 else { throw ConfigurationError("PERCEPTUAL_DISTANCE: a distance above 0 expected") }
                configuration.perceptualDistance[imageFormat] = distance
            }
        },
        .init(name: "PROGRESSIVE_JPEG", key: "progressiveJPEG") {
            $0.progressiveJPEG = try bool($1, "PROGRESSIVE_JPEG")
        },
        .init(name: "MAX_AGE", key: "maxAge") { $0.cacheControl.maxAge = try int($1, "MAX_AGE") },
        .init(name: "STALE_WHILE_REVALIDATE", key: "staleWhileRevalidate") {
            $0.cacheControl.staleWhileRevalidate = try int($1, "STALE_WHILE_REVALIDATE")
        },
        .init(name: "SOURCE_MIN_TTL", key: "sourceMinTTL") {
            $0.freshness.minimumTTL = try double($1, "SOURCE_MIN_TTL")
            $0.freshness.maximumTTL = max($0.freshness.maximumTTL, $0.freshness.minimumTTL)
        },
        .init(name: "SOURCE_MAX_TTL", key: "sourceMaxTTL") {
            $0.freshness.maximumTTL = max($0.freshness.minimumTTL, try double($1, "SOURCE_MAX_TTL"))
        },
        .init(name: "SOURCE_DEFAULT_TTL", key: "sourceDefaultTTL") {
            $0.freshness.defaultTTL = try double($1, "SOURCE_DEFAULT_TTL")
        },
        .init(name: "RESULT_MEMORY_MB", key: "resultMemoryMB") {
            $0.resultMemoryBytes = try megabytes($1, "RESULT_MEMORY_MB")
        },
        .init(name: "SOURCE_MEMORY_MB", key: "sourceMemoryMB") {
            $0.sourceMemoryBytes = try megabytes($1, "SOURCE_MEMORY_MB")
        },
        .init(name: "RESULT_DISK_MB", key: "resultDiskMB") { $0.resultDiskBytes = try megabytes($1, "RESULT_DISK_MB") },
        .init(name: "SOURCE_DISK_MB", key: "sourceDiskMB") { $0.sourceDiskBytes = try megabytes($1, "SOURCE_DISK_MB") },
        .init(name: "CACHE_DIR", key: "cacheDirectory") {
            $0.cacheDirectory = URL(fileURLWithPath: $1, isDirectory: true)
        },
        .init(name: "REDIS_URL", key: "redis") { $0.redis = $1.isEmpty ? nil : $1 },
        .init(name: "REDIS_KEY_PREFIX", key: "redisKeyPrefix") { $0.redisKeyPrefix = $1 },
        .init(name: "WORKERS", key: "workers") { $0.workers = try int($1, "WORKERS", min: 1) },
        .init(name: "QUEUE_LIMIT", key: "queueLimit") { $0.queueLimit = try int($1, "QUEUE_LIMIT") },
        .init(name: "REQUEST_TIMEOUT", key: "requestTimeout") {
            $0.requestTimeout = try double($1, "REQUEST_TIMEOUT")
        },
        .init(name: "ORIGIN_TIMEOUT", key: "originTimeout") { $0.originTimeout = try double($1, "ORIGIN_TIMEOUT") },
        .init(name: "DRAIN_SECONDS", key: "drainSeconds") { $0.drainSeconds = try double($1, "DRAIN_SECONDS") },
        .init(name: "IDLE_TIMEOUT", key: "idleTimeout") {
            $0.connectionLimits.idleTimeout = try double($1, "IDLE_TIMEOUT")
        },
        .init(name: "HEADER_TIMEOUT", key: "headerTimeout") {
            $0.connectionLimits.headerTimeout = try double($1, "HEADER_TIMEOUT")
        },
        .init(name: "WRITE_TIMEOUT", key: "writeTimeout") {
            $0.connectionLimits.writeTimeout = try double($1, "WRITE_TIMEOUT")
        },
        .init(name: "MAX_CONNECTIONS", key: "maxConnections") {
            $0.connectionLimits.maxConnections = try int($1, "MAX_CONNECTIONS", min: 1)
        },
        .init(name: "MAX_PIPELINED", key: "maxPipelined") {
            $0.connectionLimits.maxPipelined = try int($1, "MAX_PIPELINED", min: 1)
        },
        .init(name: "SEND_BUFFER_KB", key: "sendBufferKB") {
            let kilobytes = try int($1, "SEND_BUFFER_KB")
            $0.connectionLimits.sendBufferBytes = kilobytes == 0 ? nil : kilobytes << 10
        },
        .init(name: "LISTEN_BACKLOG", key: "listenBacklog") {
            $0.connectionLimits.listenBacklog = try int($1, "LISTEN_BACKLOG", min: 1)
        },
        .init(name: "MAX_PENDING_OUTPUT_MB", key: "maxPendingOutputMB") {
            $0.maxPendingOutputBytes = try megabytes($1, "MAX_PENDING_OUTPUT_MB")
        },
        .init(name: "RAISE_FILE_LIMIT", key: "raiseFileLimit") {
            $0.raisesFileLimit = try bool($1, "RAISE_FILE_LIMIT")
        },
        .init(name: "HUGE_PAGES", key: "hugePages") { $0.usesHugePages = try bool($1, "HUGE_PAGES") },
        .init(name: "DNS_CACHE_SECONDS", key: "dnsCacheSeconds") {
            $0.dnsCacheSeconds = try double($1, "DNS_CACHE_SECONDS")
        },
        .init(name: "SAMPLES", key: "samples") { $0.servesSamples = try bool($1, "SAMPLES") },
        .init(name: "PUBLIC_URL", key: "publicURL") { $0.publicURL = $1.isEmpty ? nil : $1 },
        .init(name: "LOG_LEVEL", key: "logLevel") { $0.logLevel = $1 },
        .init(name: "LOG_FORMAT", key: "logFormat") { configuration, text in
            guard ["json", "text"].contains(text.lowercased()) else {
                throw ConfigurationError("LOG_FORMAT: json or text expected")
            }
            configuration.logJSON = text.lowercased() == "json"
        },
        .init(name: "TRACES_ENDPOINT", key: "tracesEndpoint") { $0.tracesEndpoint = $1.isEmpty ? nil : $1 },
    ]
}

extension ThumbnailServerConfiguration {
    /// The defaults, then the JSON file named by `--config PATH` (or `CONFIG_FILE`), then the environment, then
    /// `--redis URL` on the command line.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting that could not be read, or an unknown key in the file.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        arguments: [String] = CommandLine.arguments
    ) throws -> Self {
        var configuration = Self()
        var path = environment["CONFIG_FILE"]
        var redis: String?
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            if (argument == "--config" || argument == "--redis"), index + 1 < arguments.count {
                if argument == "--config" { path = arguments[index + 1] } else { redis = arguments[index + 1] }
                index += 1
            } else if argument.hasPrefix("--config=") {
                path = String(argument.dropFirst("--config=".count))
            } else if argument.hasPrefix("--redis=") {
                redis = String(argument.dropFirst("--redis=".count))
            }
            index += 1
        }
        if let path { try configuration.apply(file: URL(fileURLWithPath: path)) }
        for setting in ConfigurationSetting.all {
            if let value = environment[setting.name] { try setting.apply(&configuration, value) }
        }
        if let redis { configuration.redis = redis }
        return configuration
    }

    /// Applies the settings of a JSON object file (keys as in ``ConfigurationSetting``).
    mutating func apply(file: URL) throws {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw ConfigurationError("config file \(file.path): \(error.localizedDescription)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError("config file \(file.path): a JSON object expected")
        }
        let settings = Dictionary(uniqueKeysWithValues: ConfigurationSetting.all.map { ($0.key, $0) })
        for (key, value) in object {
            guard let setting = settings[key] else { throw ConfigurationError("config file: unknown setting \(key)") }
            try setting.apply(&self, Self.text(value, separator: key == "presets" ? ";" : ","))
        }
    }

    /// A JSON value as the environment would spell it.
    private static func text(_ value: Any, separator: String) -> String {
        switch value {
        case let string as String: return string
        // Int before Bool: a JSON number may arrive as an NSNumber, which also casts to Bool.
        case let int as Int: return String(int)
        case let double as Double: return String(double)
        case let bool as Bool: return bool ? "true" : "false"
        case let array as [Any]: return array.map { text($0, separator: ",") }.joined(separator: ",")
        case let object as [String: Any]:
            return object.sorted { $0.key < $1.key }.map { "\($0.key)=\(text($0.value, separator: ","))" }
                .joined(separator: separator)
        default: return ""
        }
    }
}
