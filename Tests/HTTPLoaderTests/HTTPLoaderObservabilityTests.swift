import Foundation
import HTTPLoader
import ImageCore
import MetricsTestKit
import Testing

/// Events, metrics and loader routing.
@Suite struct HTTPLoaderObservabilityTests {
    /// Reads events until `count` arrived or a second passed.
    private func collect(_ stream: AsyncStream<HTTPLoaderEvent>, count: Int) async -> [HTTPLoaderEvent] {
        await withTaskGroup(of: [HTTPLoaderEvent].self) { group in
            group.addTask {
                var events: [HTTPLoaderEvent] = []
                for await event in stream {
                    events.append(event)
                    if events.count == count { break }
                }
                return events
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: 5_000_000_000)
                return []
            }
            let first = await group.next() ?? []
            group.cancelAll()
            return first
        }
    }

    @Test func eventsTellStartResponseFinishJoinAndCancel() async throws {
        let body = pngLikeBytes(count: 1000)
        try await withServer(script: { request in
            request.path == "/held" ? .hold("never", then: .respond()) : .hold("go", then: .respond(body: body))
        }) { server, loader in
            let stream = loader.events()
            let first = startLoad(loader, server.url("/e.png")).recorder
            let second = startLoad(loader, server.url("/e.png")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            server.open("go")
            _ = try #require(try await first.result()?.get())
            _ = try #require(try await second.result()?.get())
            let held = startLoad(loader, server.url("/held"))
            #expect(await server.waitUntil { $0.requests.count == 2 })
            held.operation.cancel()

            let events = await collect(stream, count: 6)
            let descriptions = events.map { event -> String in
                switch event.kind {
                case .started(let attempt): "started \(event.url.path) \(attempt)"
                case .joined(let callers): "joined \(event.url.path) \(callers)"
                case .response(let status, let expected): "response \(event.url.path) \(status) \(expected ?? -1)"
                case .finished(let status, let bytes, _): "finished \(event.url.path) \(status) \(bytes)"
                case .failed(let error, _): "failed \(event.url.path) \(error.code)"
                case .cancelled: "cancelled \(event.url.path)"
                case .retrying: "retrying \(event.url.path)"
                case .priorityChanged(let priority): "priority \(event.url.path) \(priority)"
                }
            }
            #expect(
                descriptions == [
                    "started /e.png 1", "joined /e.png 2", "response /e.png 200 1000", "finished /e.png 200 1000",
                    "started /held 1", "cancelled /held",
                ])
            #expect(Set(events.prefix(4).map(\.transferID)).count == 1)
            #expect(events[4].transferID != events[0].transferID)
        }
    }

    @Test func metricsCountRequestsBytesJoinsAndFailuresByKind() async throws {
        let metrics = TestMetrics()
        let body = pngLikeBytes(count: 1234)
        try await withServer(
            loader: {
                $0.metricsFactory = metrics
                $0.metricsPrefix = "t"
            },
            script: { request in
                request.path == "/missing" ? .respond(status: .notFound) : .hold("go", then: .respond(body: body))
            }
        ) { server, loader in
            let a = startLoad(loader, server.url("/m.png")).recorder
            let b = startLoad(loader, server.url("/m.png")).recorder
            #expect(await server.waitUntil { $0.requests.count == 1 })
            server.open("go")
            _ = try #require(try await a.result()?.get())
            _ = try #require(try await b.result()?.get())
            _ = try #require(await load(loader, server.url("/missing"))?.error)

            #expect(try metrics.expectCounter("t_requests_total").totalValue == 2)
            #expect(try metrics.expectCounter("t_bytes_total").totalValue == Int64(body.count))
            #expect(try metrics.expectCounter("t_coalesced_total").totalValue == 1)
            #expect(
                try metrics.expectCounter("t_failures_total", [("kind", "invalidDownloadStatusCode")]).totalValue == 1)
            #expect(try metrics.expectTimer("t_duration").values.count == 2)
        }
    }

    @Test func loadersManagerRoutesEachSchemeToItsLoader() async throws {
        let body = pngLikeBytes(count: 400, seed: 3)
        try await withServer(script: { _ in .respond(headers: [("Content-Type", "image/png")], body: body) }) {
            server, loader in
            let manager = LoadersManager(
                loaders: [FileLoader(rootDirectory: FileManager.default.temporaryDirectory), DataURLLoader(), loader])
            let http = try #require(try await load(manager, server.url("/via-http.png"))?.get())
            #expect(http.data == Data(body))
            #expect(http.response.statusCode == 200)
            #expect(server.requests(to: "/via-http.png").count == 1)

            let file = FileManager.default.temporaryDirectory.appendingPathComponent("httploader-\(UUID()).png")
            let fileBytes = pngLikeBytes(count: 123, seed: 5)
            try Data(fileBytes).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let fromFile = try #require(try await load(manager, file)?.get())
            #expect(fromFile.data == Data(fileBytes))
            #expect(fromFile.response.statusCode == nil)

            let dataURL = try #require(URL(string: "data:image/png;base64," + Data(body).base64EncodedString()))
            let fromData = try #require(try await load(manager, dataURL)?.get())
            #expect(fromData.data == Data(body))
            #expect(fromData.response.contentType == "image/png")

            #expect(server.stats.value.requests.count == 1)  // file and data never reached the server
            let none = try #require(await load(manager, URL(string: "gopher://example.com/x")!)?.error)
            #expect(none.code == .noLoader)
        }
    }
}
