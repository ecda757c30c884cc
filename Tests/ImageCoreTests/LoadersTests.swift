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
        let loaded = try await load(FileLoader(), file).get()
        #expect(loaded.data == data)
        let missing = await load(FileLoader(), dir.appendingPathComponent("missing.png"))
        #expect(missing.error?.code == .downloadFailed)
        let tooBig = await load(FileLoader(maxFileSize: 4), file)
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
        let manager = LoadersManager(loaders: [FileLoader(), DataURLLoader(), scripted])
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
