import Dispatch
import Foundation
import ImageCore

/// An origin for the main-line model test: per URL a version (its bytes and ETag) and a mode (healthy, 404, 500,
/// truncated, `no-store`, slow), bytes that differ per partition (as a server serving per-tenant images would),
/// a per-request deadline, revalidation, and a record of every version it served — the reference the test checks
/// each delivered image against.
///
/// Thread-safe; answers on its own queue after a small delay.
public final class ModelOrigin: ImageLoader, Sendable {
    /// How the origin answers a URL now.
    public enum Mode: Sendable, CaseIterable {
        case healthy, notFound, serverError, truncated, noStore, slow
    }

    /// What was served: a URL's version for a partition.
    public struct Served: Hashable, Sendable {
        public let url: String
        public let partition: String?
        public let version: Int
    }

    /// The context key of a load's deadline, seconds (`Double`).
    public static let deadline = ImageContextOption("model.deadline")
    /// How long a slow answer takes, seconds.
    public static let slowDelay = 0.15

    private struct State {
        var versions: [String: Int] = [:]
        var modes: [String: Mode] = [:]
        var served: Set<Served> = []
        var requests = 0
        var everFailed: [String: Set<Mode>] = [:]
        var answers: [Mode: Int] = [:]
        var changedETags = 0
        /// When requests for a URL (and partition) arrived, in order.
        var arrivals: [String: [Date]] = [:]
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "ModelOrigin", attributes: .concurrent)

    /// An origin where every URL starts healthy at version 0.
    public init() {}

    /// Requests so far.
    public var requestCount: Int { state.withLock { $0.requests } }

    /// Makes `url` answer with new bytes and a new ETag.
    public func bump(_ url: URL) { state.withLock { $0.versions[url.absoluteString, default: 0] += 1 } }

    /// Sets how `url` answers from now on.
    public func set(_ mode: Mode, for url: URL) { state.withLock { $0.modes[url.absoluteString] = mode } }

    /// Every (URL, partition, version) served with a 200 so far.
    public var served: Set<Served> { state.withLock { $0.served } }

    /// How many requests each mode answered so far (a request cancelled or timed out before its answer counts
    /// for none).
    public var answers: [Mode: Int] { state.withLock { $0.answers } }

    /// Requests that revalidated with an ETag the origin no longer serves (its bytes changed since they were
    /// cached).
    public var changedETags: Int { state.withLock { $0.changedETags } }

    /// When the latest request for `url` and `partition` that arrived before `date` arrived: the earliest a
    /// transfer that ended by `date` can have started (loads wait for a place before their request is sent).
    public func latestRequest(for url: URL, partition: String?, before date: Date) -> Date? {
        state.withLock { $0.arrivals[url.absoluteString + " " + (partition ?? "-")]?.last { $0 <= date } }
    }

    /// The failing modes `url` answered with so far.
    public func failures(of url: URL) -> Set<Mode> { state.withLock { $0.everFailed[url.absoluteString] ?? [] } }

    /// The bytes of `url` at `version` for `partition`: a test image whose size, frame count and colours follow from
    /// the three (animated when the path contains "anim").
    public static func bytes(url: String, partition: String?, version: Int) -> Data {
        var hasher = FNV()
        hasher.add(url)
        let shape = hasher.value
        hasher.add(partition ?? "-")
        hasher.add(String(version))
        let colour = hasher.value
        let frames = url.contains("anim") ? 3 : 1
        var colors: [RGBAColor] = []
        for index in 0..<frames {
            let red = UInt8(truncatingIfNeeded: colour >> UInt64(index * 8))
            let green = UInt8(truncatingIfNeeded: colour >> UInt64(16 + index * 4))
            colors.append(RGBAColor(red: red, green: green, blue: UInt8(index * 60), alpha: 255))
        }
        let width = 20 + Int(shape % 40)
        let height = 12 + Int((shape >> 8) % 30)
        return TestCoder.data(width: width, height: height, colors: colors)
    }

    /// `test:` URLs.
    public func canRequestImage(for url: URL) -> Bool { url.scheme == "test" }

    /// The deadline: loads with different deadlines never share a transfer.
    public func transferKey(for url: URL, options: ImageOptions, context: ImageContext) -> String {
        context[Self.deadline].map { "\($0)" } ?? ""
    }

    /// Answers per the URL's mode and version, within the load's deadline.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        let key = url.absoluteString
        let partition = context.cachePartitionKey
        let (version, mode) = state.withLock { state -> (Int, Mode) in
            state.requests += 1
            state.arrivals[key + " " + (partition ?? "-"), default: []].append(Date())
            return (state.versions[key] ?? 0, state.modes[key] ?? .healthy)
        }
        let once = Locked<(@Sendable (Result<LoadedImageData, ImageError>) -> Void)?>(completion)
        let complete: @Sendable (Result<LoadedImageData, ImageError>) -> Void = { result in
            let first = once.withLock { pending in
                defer { pending = nil }
                return pending
            }
            first?(result)
        }
        let operation = CancellableOperation()
        operation.onCancel { complete(.failure(.cancelled(stage: .download))) }
        let delay = mode == .slow ? Self.slowDelay : 0.002
        if let deadline = context[Self.deadline] as? Double, deadline < delay {
            queue.asyncAfter(deadline: .now() + deadline) {
                complete(.failure(ImageError(.timedOut, stage: .download, message: "model deadline")))
            }
            return operation
        }
        let etag = "\"v\(version)-\(partition ?? "-")\""
        let cachedETag = context.loaderCachedMetadata?.etag
        if let cachedETag, cachedETag != etag { state.withLock { $0.changedETags += 1 } }
        queue.asyncAfter(deadline: .now() + delay) { [state] in
            guard !operation.isCancelled else { return }
            let bytes = Self.bytes(url: key, partition: partition, version: version)
            var response = ResponseMetadata(url: url, statusCode: 200, contentType: "image/x-test", etag: etag)
            let result: Result<LoadedImageData, ImageError>
            switch mode {
            case .notFound: result = .failure(.invalidDownloadStatusCode(404))
            case .serverError: result = .failure(.invalidDownloadStatusCode(500))
            case .truncated: result = .success(LoadedImageData(data: bytes.prefix(bytes.count - 3), response: response))
            case .healthy, .slow, .noStore:
                if cachedETag == etag {
                    result = .failure(ImageError(.cacheNotModified, stage: .download))
                } else {
                    if mode == .noStore { response.headers["cache-control"] = "no-store" }
                    result = .success(LoadedImageData(data: bytes, response: response))
                }
            }
            state.withLock { state in
                state.answers[mode, default: 0] += 1
                switch mode {
                case .healthy, .slow, .noStore:
                    state.served.insert(Served(url: key, partition: partition, version: version))
                case .notFound, .serverError, .truncated:
                    state.everFailed[key, default: []].insert(mode)
                }
            }
            complete(result)
        }
        return operation
    }
}

/// FNV-1a, 64 bits: a stable hash of strings (Swift's `Hasher` is seeded per process).
public struct FNV: Sendable {
    /// The hash so far.
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    /// A fresh hash.
    public init() {}

    /// Mixes `text` in.
    public mutating func add(_ text: String) {
        for byte in text.utf8 { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        value = (value ^ 0xff) &* 0x0000_0100_0000_01b3
    }

    /// Mixes `bytes` in.
    public mutating func add(_ bytes: some Sequence<UInt8>) {
        for byte in bytes { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    }
}
