import Foundation
import ImageCore
import ImageTestSupport
import Testing

@Suite struct LoadersTests {
    private func load(_ loader: any ImageLoader, _ url: URL) async -> Result<LoadedImageData, ImageError> {
        await withCheckedContinuation { continuation in
            _ = loader.requestImage(with: url, options: [], context: ImageContext(), progress: nil) {
                continuation.resume(returning: $0)
            }
        }
    }

    @Test func fileLoaderReadsFilesAndReportsMissingOnes() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fileloader-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("a.timg")
        let data = TestCoder.data(width: 3, height: 3)
        try data.write(to: file)
        let loaded = try await load(FileLoader(rootDirectory: dir), file).get()
        #expect(loaded.data == data)
        let missing = await load(FileLoader(rootDirectory: dir), dir.appendingPathComponent("missing.png"))
        #expect(missing.error?.code == .downloadFailed)
        let tooBig = await load(FileLoader(rootDirectory: dir, maxFileSize: 4), file)
        #expect(tooBig.error?.code == .downloadTooLarge)
    }

    @Test func dataURLLoaderDecodesBase64AndPercentEncoding() async throws {
        let bytes = TestCoder.data(width: 1, height: 1)
        let url = URL(string: "data:image/x-test;base64,\(bytes.base64EncodedString())")!
        let loaded = try await load(DataURLLoader(), url).get()
        #expect(loaded.data == bytes)
        #expect(loaded.response.contentType == "image/x-test")
        let text = try await load(DataURLLoader(), URL(string: "data:,hello%20world")!).get()
        #expect(String(decoding: text.data, as: UTF8.self) == "hello world")
        let bad = await load(DataURLLoader(), URL(string: "data:image/png;base64")!)
        #expect(bad.error?.code == .invalidURL)
    }

    @Test func loadersManagerRoutesByScheme() async throws {
        let scripted = ScriptedLoader()
        let url = URL(string: "test://x/a.png")!
        scripted.set(.data(Data([1]), ResponseMetadata()), for: url)
        let manager = LoadersManager(
            loaders: [FileLoader(rootDirectory: URL(fileURLWithPath: "/tmp")), DataURLLoader(), scripted])
        #expect(manager.canRequestImage(for: url))
        #expect(manager.canRequestImage(for: URL(string: "data:,x")!))
        #expect(manager.canRequestImage(for: URL(fileURLWithPath: "/tmp/x.png")))
        #expect(!manager.canRequestImage(for: URL(string: "gopher://x/y")!))
        _ = try await load(manager, url).get()
        #expect(scripted.requestCount == 1)
        let data = try await load(manager, URL(string: "data:,abc")!).get()
        #expect(data.data == Data("abc".utf8))
        #expect(scripted.requestCount == 1)
        let none = await load(manager, URL(string: "gopher://x/y")!)
        #expect(none.error?.code == .noLoader)
    }
}

/// Local files are opt-in and confined to a root directory.
@Suite struct FileLoaderConfinementTests {
    private func load(_ loader: FileLoader, _ url: URL) async -> Result<LoadedImageData, ImageError> {
        await withCheckedContinuation { continuation in
            _ = loader.requestImage(with: url, options: [], context: ImageContext(), progress: nil) {
                continuation.resume(returning: $0)
            }
        }
    }

    @Test func theSharedRegistryHasNoFileLoader() {
        #expect(!LoadersManager.shared.canRequestImage(for: URL(fileURLWithPath: "/etc/hostname")))
        #expect(!LoadersManager().canRequestImage(for: URL(fileURLWithPath: "/etc/hostname")))
    }

    @Test func pathsOutsideTheRootAndSymlinksOutOfItFailLikeMissingFiles() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("confine-\(UUID())")
        let root = base.appendingPathComponent("root")
        let outside = base.appendingPathComponent("root2")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let secret = outside.appendingPathComponent("secret.timg")
        try TestCoder.data(width: 2, height: 2).write(to: secret)
        let inside = root.appendingPathComponent("ok.timg")
        try TestCoder.data(width: 2, height: 2).write(to: inside)
        let link = root.appendingPathComponent("link.timg")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: secret)
        let loader = FileLoader(rootDirectory: root)
        #expect(try await load(loader, inside).get().data.count == 13)
        let results = [
            await load(loader, secret), await load(loader, link),
            await load(loader, URL(fileURLWithPath: root.path + "/../root2/secret.timg")),
            await load(loader, root.appendingPathComponent("missing.timg")),
            await load(loader, URL(fileURLWithPath: "/etc/hostname")),
        ]
        for result in results {
            #expect(result.error?.code == .downloadFailed)
            #expect(result.error?.message?.hasPrefix("file not available") == true)
        }
        #expect(await load(loader, root).error?.code == .downloadFailed, "a directory is not a file")
    }

    /// A FIFO under the root is not a file: before, opening it waited for a writer forever (the load never ended and
    /// held a pool thread).
    @Test func aFIFOFailsLikeAMissingFileAtOnce() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-\(UUID())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let fifo = root.appendingPathComponent("pipe.timg")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        let answered = Locked(false)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<ImageError?, Never>) in
            @Sendable func resume(_ error: ImageError?) {
                if answered.withLock({ done in
                    defer { done = true }; return !done
                }) {
                    continuation.resume(returning: error)
                }
            }
            _ = FileLoader(rootDirectory: root).requestImage(
                with: fifo, options: [], context: ImageContext(), progress: nil
            ) { resume($0.error ?? ImageError(.badImageData, stage: .download, message: "the FIFO loaded")) }
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { resume(nil) }
        }
        let error = try #require(result, "the load of a FIFO did not end in 5 s")
        #expect(error.code == .downloadFailed && error.message?.hasPrefix("file not available") == true)
    }
}
