import Foundation
import HTTPLoader
import ImageCore
import ImageTestSupport
import NIOCore
import NIOPosix
import Testing

/// A real nginx (Debian's `nginx-light`) on 127.0.0.1 with a temporary prefix, serving files the test writes.
///
/// Skipped with a printed message when `/usr/sbin/nginx` is missing, unless `REQUIRE_NGINX=1` (CI), where a
/// missing nginx fails the test.
final class NginxServer: Sendable {
    static let binary = ProcessInfo.processInfo.environment["NGINX_BINARY"] ?? "/usr/sbin/nginx"

    let root: URL
    let port: Int
    /// The HTTPS port (a self-signed certificate), nil when `openssl` is not there to make one.
    let tlsPort: Int?
    private let prefix: URL
    private let process: Process

    private init(prefix: URL, root: URL, port: Int, tlsPort: Int?, process: Process) {
        self.prefix = prefix
        self.root = root
        self.port = port
        self.tlsPort = tlsPort
        self.process = process
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    func tlsURL(_ path: String) -> URL? { tlsPort.map { URL(string: "https://127.0.0.1:\($0)\(path)")! } }

    /// Makes a self-signed certificate with the openssl CLI; false when openssl is missing or fails.
    private static func makeCertificate(in prefix: URL) async -> Bool {
        let openssl = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: openssl) else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-keyout", prefix.appendingPathComponent("key.pem").path,
            "-out", prefix.appendingPathComponent("cert.pem").path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        for _ in 0..<400 where process.isRunning { try? await Task.sleep(nanoseconds: 25_000_000) }
        return !process.isRunning && process.terminationStatus == 0
    }

    /// Starts nginx in the foreground on a free port; nil when nginx is not installed.
    static func start() async throws -> NginxServer? {
        guard FileManager.default.isExecutableFile(atPath: binary) else { return nil }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("httploader-nginx-\(UUID())")
        let root = prefix.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let port = try await freePort()
        let tlsPort = await makeCertificate(in: prefix) ? try await freePort() : nil
        let tlsServer =
            tlsPort.map {
                """
                server {
                    listen 127.0.0.1:\($0) ssl;
                    ssl_certificate \(prefix.path)/cert.pem;
                    ssl_certificate_key \(prefix.path)/key.pem;
                    root \(root.path);
                }
                """
            } ?? ""
        let config = """
            daemon off;
            worker_processes 1;
            pid \(prefix.path)/nginx.pid;
            error_log \(prefix.path)/error.log warn;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(prefix.path)/client_body;
                proxy_temp_path \(prefix.path)/proxy;
                fastcgi_temp_path \(prefix.path)/fastcgi;
                uwsgi_temp_path \(prefix.path)/uwsgi;
                scgi_temp_path \(prefix.path)/scgi;
                types { image/png png; image/jpeg jpg; }
                default_type application/octet-stream;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root.path);
                    location /old/ { rewrite ^/old/(.*)$ /img/$1 permanent; }
                }
                \(tlsServer)
            }
            """
        let configFile = prefix.appendingPathComponent("nginx.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", prefix.path, "-c", configFile.path, "-e", "\(prefix.path)/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = NginxServer(prefix: prefix, root: root, port: port, tlsPort: tlsPort, process: process)
        guard await server.waitUntilListening() else {
            let log = (try? String(contentsOfFile: "\(prefix.path)/error.log", encoding: .utf8)) ?? ""
            await server.stop()
            throw ImageError(.downloadFailed, stage: .download, message: "nginx did not start: \(log)")
        }
        return server
    }

    /// Writes `bytes` at `path` under the document root.
    func write(_ bytes: [UInt8], at path: String) throws {
        let file = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: file)
    }

    /// Stops nginx (SIGTERM to the master, SIGKILL after 5 s) without blocking a cooperative thread.
    ///
    /// nginx runs with its master process on purpose: the master unblocks signals itself, whereas a single-process
    /// nginx keeps the signal mask inherited from the test runner and would never see SIGTERM.
    func stop() async {
        if process.isRunning { process.terminate() }
        for _ in 0..<200 where process.isRunning { try? await Task.sleep(nanoseconds: 25_000_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: prefix)
    }

    private func waitUntilListening() async -> Bool {
        for _ in 0..<200 {
            if !process.isRunning { return false }
            if let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            {
                try? await channel.close()
                return true
            }
            try? await Task.sleep(nanoseconds: 25_000_000)
        }
        return false
    }

    /// A port the kernel just gave out and released (a small race with other processes, acceptable in tests).
    /// A port below the ephemeral range with nothing bound to it (``TestPorts``): nginx binds it after this returns.
    private static func freePort() async throws -> Int { try TestPorts.free() }
}

@Suite struct NginxIntegrationTests {
    static let installed = FileManager.default.isExecutableFile(atPath: NginxServer.binary)
    /// CI sets REQUIRE_NGINX=1: then a missing or broken nginx fails the test instead of skipping it.
    static let required = ProcessInfo.processInfo.environment["REQUIRE_NGINX"] == "1"

    @Test(.enabled(if: installed || required, "nginx is not installed (apt-get install nginx-light)"))
    func loadsRevalidatesAndFailsAgainstNginx() async throws {
        guard let nginx = try await NginxServer.start() else {
            Issue.record("REQUIRE_NGINX=1 but \(NginxServer.binary) is missing: install nginx-light")
            return
        }
        // Fail TLS handshakes at once instead of retrying the connection until the connect timeout.
        let loader = makeLoader { $0.retryConnectionEstablishment = false }
        do {
            let images = (0..<20).map { pngLikeBytes(count: 2000 + $0 * 997, seed: UInt8($0)) }
            for (index, bytes) in images.enumerated() { try nginx.write(bytes, at: "img/\(index).png") }

            // 200 with nginx's validators, many files concurrently.
            let recorders = images.indices.map { startLoad(loader, nginx.url("/img/\($0).png")).recorder }
            for (index, recorder) in recorders.enumerated() {
                let loaded = try #require(try await recorder.result()?.get())
                #expect(loaded.data == Data(images[index]))
                #expect(loaded.response.contentType == "image/png")
            }
            let first = try #require(try await load(loader, nginx.url("/img/0.png"))?.get())
            let etag = try #require(first.response.etag)
            let lastModified = try #require(first.response.lastModified)

            // Revalidation: nginx answers 304 to the stored ETag / Last-Modified.
            var context = ImageContext()
            context.loaderCachedMetadata = CacheEntryMetadata(etag: etag, lastModified: lastModified)
            let notModified = try #require(
                await load(loader, nginx.url("/img/0.png"), options: .refreshCached, context: context)?.error)
            #expect(notModified.code == .cacheNotModified)
            #expect(notModified.statusCode == 304)

            // A changed file gets a new ETag and the new bytes. nginx's validators have one-second resolution:
            // move the modification time on instead of waiting for the clock.
            let changed = pngLikeBytes(count: 4321, seed: 99)
            try nginx.write(changed, at: "img/0.png")
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(10)],
                ofItemAtPath: nginx.root.appendingPathComponent("img/0.png").path)
            let refreshed = try #require(
                try await load(loader, nginx.url("/img/0.png"), options: .refreshCached, context: context)?.get())
            #expect(refreshed.data == Data(changed))
            #expect(refreshed.response.etag != etag)

            // A redirect and a 404.
            let redirected = try #require(try await load(loader, nginx.url("/old/1.png"))?.get())
            #expect(redirected.data == Data(images[1]))
            let missing = try #require(await load(loader, nginx.url("/img/none.png"))?.error)
            #expect(missing.statusCode == 404)
            #expect(loader.shouldBlockFailedURL(nginx.url("/img/none.png"), error: missing))

            // TLS with a self-signed certificate: refused by default, accepted with the opt-out.
            if let secure = nginx.tlsURL("/img/2.png") {
                let refused = try #require(await load(loader, secure)?.error)
                #expect(refused.code == .downloadFailed)
                #expect(!loader.shouldBlockFailedURL(secure, error: refused))
                let insecure = try #require(
                    try await load(loader, secure, options: .allowInvalidSSLCertificates)?.get())
                #expect(insecure.data == Data(images[2]))
            } else {
                print("NginxIntegrationTests: TLS part skipped — /usr/bin/openssl not found to make a certificate")
            }
        } catch {
            try? await loader.shutdown()
            await nginx.stop()
            throw error
        }
        try await loader.shutdown()
        await nginx.stop()
    }
}
