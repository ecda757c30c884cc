import Foundation

/// Where a Redis server listens: a TCP host and port, or a unix socket path.
public enum RedisEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// A host name or IP address and a port.
    case tcp(host: String, port: Int)
    /// A unix domain socket.
    case unix(path: String)

    /// `host:port` or the socket path.
    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): path
        }
    }
}

/// How to reach and authenticate with a Redis server (or every node of a cluster), read from a URL.
///
/// Forms: `redis://[[user]:password@]host[:port][/db]`, `rediss://…` for TLS, and `redis+unix:///path` or
/// `unix:///path` for a unix socket (database and credentials as `?db=2&user=u&password=p`). The default port is
/// 6379. Percent-encoded user names and passwords are decoded.
public struct RedisServerAddress: Sendable, Hashable {
    /// The server.
    public var endpoint: RedisEndpoint
    /// True for `rediss://`.
    public var usesTLS: Bool
    /// The ACL user, if any (nil authenticates as `default` when a password is given).
    public var username: String?
    /// The password, if any.
    public var password: String?
    /// The database index (0 by default; Redis Cluster only has 0).
    public var database: Int

    /// Creates an address.
    public init(
        endpoint: RedisEndpoint, usesTLS: Bool = false, username: String? = nil, password: String? = nil,
        database: Int = 0
    ) {
        self.endpoint = endpoint
        self.usesTLS = usesTLS
        self.username = username
        self.password = password
        self.database = database
    }

    /// Reads a `redis://`, `rediss://`, `redis+unix://` or `unix://` URL.
    ///
    /// - Throws: ``RedisConfigurationError`` naming what is wrong with the URL.
    public init(url text: String) throws(RedisConfigurationError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw RedisConfigurationError("not a URL: \(Self.redacted(text))")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name.lowercased(), $0.value ?? "") }, uniquingKeysWith: { $1 })
        var database = 0
        if let db = query["db"] {
            guard let value = Int(db), value >= 0 else { throw RedisConfigurationError("bad db: \(db)") }
            database = value
        }
        let username = components.percentEncodedUser.flatMap { $0.removingPercentEncoding }.flatMap {
            $0.isEmpty ? nil : $0
        }
        let password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        switch scheme {
        case "redis", "rediss":
            guard let host = components.host, !host.isEmpty else {
                throw RedisConfigurationError("no host in \(Self.redacted(text))")
            }
            let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            if !path.isEmpty {
                guard let value = Int(path), value >= 0 else {
                    throw RedisConfigurationError("bad database in path: /\(path)")
                }
                database = value
            }
            let port = components.port ?? 6379
            guard (1...65535).contains(port) else { throw RedisConfigurationError("bad port \(port)") }
            let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            self.init(
                endpoint: .tcp(host: bareHost, port: port), usesTLS: scheme == "rediss",
                username: username ?? query["user"], password: password ?? query["password"], database: database)
        case "redis+unix", "unix":
            guard !components.path.isEmpty else { throw RedisConfigurationError("no socket path in \(text)") }
            self.init(
                endpoint: .unix(path: components.path), usesTLS: false, username: username ?? query["user"],
                password: password ?? query["password"], database: database)
        default:
            throw RedisConfigurationError("unsupported scheme \(scheme) (redis, rediss, redis+unix, unix)")
        }
    }

    /// The URL with any password replaced by `***`, for logs and errors.
    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text) else { return "<unparsable>" }
        if components.password != nil { components.password = "***" }
        if let items = components.queryItems {
            components.queryItems = items.map {
                $0.name.lowercased() == "password" ? URLQueryItem(name: $0.name, value: "***") : $0
            }
        }
        return components.string ?? "<unparsable>"
    }
}

/// A Redis URL or configuration that cannot be used.
public struct RedisConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public let message: String

    init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}
