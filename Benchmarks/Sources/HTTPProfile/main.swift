import AsyncHTTPClient
import Dispatch
import Foundation
import HTTPLoader
import ImageCore
import NIOCore
import Synchronization

// A driver for profiling what HTTPLoader adds on top of AsyncHTTPClient (callgrind or perf), outside the
// benchmark harness: `HTTPProfile <loader|bare> <base URL> <set: small|photo|large> <rounds> [concurrency]`.
// It fetches the set `rounds` times (after one warm-up round) and prints requests, bytes and process CPU time.
//
//   valgrind --tool=callgrind --callgrind-out-file=loader.out .build/release/HTTPProfile loader http://… small 2

let arguments = CommandLine.arguments
guard arguments.count >= 5, let base = URL(string: arguments[2]), let rounds = Int(arguments[4]) else {
    FileHandle.standardError.write(
        Data("usage: HTTPProfile <loader|bare> <base URL> <small|photo|large> <rounds> [c]\n".utf8))
    exit(64)
}
let mode = arguments[1]
let concurrency = arguments.count > 5 ? Int(arguments[5]) ?? 6 : 6
let paths: [String] =
    switch arguments[3] {
    case "photo": (0..<200).map { "photo/\(String(format: "%03d", $0)).jpg" }
    case "large": (0..<100).map { "large/\(String(format: "%03d", $0)).jpg" }
    default: (0..<1000).map { "small/\(String(format: "%04d", $0)).jpg" }
    }
let urls = paths.map { base.appendingPathComponent($0) }

final class Batch: Sendable {
    let done = DispatchSemaphore(value: 0)
    let remaining: Atomic<Int>
    let bytes = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
    init(_ count: Int) { remaining = Atomic(count) }
    func finish(_ count: Int?) {
        if let count { bytes.add(count, ordering: .relaxed) } else { failures.add(1, ordering: .relaxed) }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }
}

final class BodyCollector: HTTPClientResponseDelegate {
    typealias Response = Int
    // AsyncHTTPClient calls a delegate on one event loop; the (uncontended) lock keeps it Sendable, as the
    // loader's own delegate takes one per body part too.
    private let body = Mutex(ByteBuffer())
    func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ part: ByteBuffer) -> EventLoopFuture<Void> {
        body.withLock { body in
            var part = part
            body.writeBuffer(&part)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }
    func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int { body.withLock { $0.readableBytes } }
}

func cpuNow() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

var configuration = HTTPLoaderConfiguration()
configuration.maxConcurrentDownloads = concurrency
configuration.timeout = 30
let loader = HTTPLoader(configuration: configuration)
var clientConfiguration = HTTPClient.Configuration(
    redirectConfiguration: .disallow,
    timeout: HTTPClient.Configuration.Timeout(connect: .seconds(30), read: .seconds(30)))
clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, concurrency)
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)

func round() -> Batch {
    let batch = Batch(urls.count)
    if mode == "bare" {
        let next = Atomic<Int>(0)
        @Sendable func startNext() {
            let index = next.add(1, ordering: .relaxed).oldValue
            guard index < urls.count else { return }
            let request = try! HTTPClient.Request(url: urls[index])
            client.execute(request: request, delegate: BodyCollector()).futureResult.whenComplete { result in
                batch.finish(try? result.get())
                startNext()
            }
        }
        for _ in 0..<min(concurrency, urls.count) { startNext() }
    } else {
        for url in urls {
            _ = loader.requestImage(with: url, options: [], context: ImageContext(), progress: nil) { result in
                batch.finish(try? result.get().data.count)
            }
        }
    }
    batch.done.wait()
    return batch
}

_ = round()  // warm-up: connections, lazy statics
let cpu = cpuNow()
var bytes = 0
var failures = 0
for _ in 0..<rounds {
    let batch = round()
    bytes += batch.bytes.load(ordering: .relaxed)
    failures += batch.failures.load(ordering: .relaxed)
}
let elapsed = cpuNow() - cpu
let requests = rounds * urls.count
print("\(mode): \(requests) requests, \(bytes) bytes, \(failures) failures, CPU \(elapsed / requests) ns/request")
try await loader.shutdown()
try await client.shutdown().get()
