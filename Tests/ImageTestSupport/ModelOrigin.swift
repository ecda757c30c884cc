import Dispatch
import Foundation
import ImageCore

/// An origin for the main-line model test and the non-interference property: per URL a version (its bytes and
/// ETag) and a mode (healthy, 404, 500, truncated, `no-store`, slow), bytes that differ per partition (as a server
/// serving per-tenant images would), real image files for some paths, bodies that trickle in (progressive
/// previews), a per-request deadline, revalidation (304 for a current ETag), a cancel registry
/// (``downloadControl(for:)``: a loader's `cancelAllDownloads()` and `cancelDownloads(for:)`), and a record of every
/// version it served — the reference the tests check each delivered image against.
///
/// As a loader it does what a real one does with the load's context: applies the request and response modifiers,
/// serves the body encrypted to a load that brings a decryptor (which the loader then applies, like a transport
/// encryption), calls the manager's header check on the first bytes, and honours the load's deadline.
///
/// Thread-safe; answers on its own queue after a small delay.
public final class ModelOrigin: ImageLoader, Sendable {
    /// How the origin answers a URL now.
    public enum Mode: Sendable, CaseIterable {
        case healthy, notFound, serverError, truncated, noStore, slow
    }

    /// How a revalidation (a request carrying a cached ETag) was answered.
    public enum Revalidation: String, Sendable, CaseIterable {
        /// 304: the cached ETag is current.
        case notModified
        /// 200 with new bytes: the cached ETag is no longer served.
        case newBytes
        /// 500: the origin failed.
        case serverError
        /// Another failure (404, truncated bytes).
        case failed
    }

    /// What was served: a URL's version for a partition, whole or cut short (a 200 whose body lacks its last
    /// bytes: some decoders still make an image of it).
    public struct Served: Hashable, Sendable {
        public let url: String
        public let partition: String?
        public let version: Int
        public let truncated: Bool

        /// What was served.
        public init(url: String, partition: String?, version: Int, truncated: Bool) {
            self.url = url
            self.partition = partition
            self.version = version
            self.truncated = truncated
        }
    }

    /// The context key of a load's deadline, seconds (`Double`): the transfer's own, so a field of the download key.
    public static let deadline = ImageContextOption(
        "model.deadline", traits: OptionTraits(.bytesFetched, download: .field("model.deadline")))
    /// A plugin key declared to act only with a flag: a deadline, seconds (`Double`), that the origin honours only
    /// for a load that sets `.handleCookies` (as a cookie jar's own timeout would). With the flag it is a field of
    /// the download key; without it the key changes nothing, and the load shares its download with plain loads.
    public static let cookieDeadline = ImageContextOption(
        "model.cookieDeadline",
        traits: OptionTraits(.bytesFetched, download: .field("model.cookieDeadline"), actsOnlyWith: .handleCookies))
    /// The deadline the origin honours for a load: the shorter of ``deadline`` and, with `.handleCookies`,
    /// ``cookieDeadline``.
    public static func deadline(options: ImageOptions, context: ImageContext) -> Double? {
        let own = context[deadline] as? Double
        let cookie = options.contains(.handleCookies) ? context[cookieDeadline] as? Double : nil
        guard let own, let cookie else { return own ?? cookie }
        return min(own, cookie)
    }
    /// How long a slow answer takes, seconds.
    public static let slowDelay = 0.15
    /// The XOR mask of a body served encrypted (to a load whose context brings a decryptor).
    public static let encryptionMask: UInt8 = 0x5A

    private struct State {
        var versions: [String: Int] = [:]
        var modes: [String: Mode] = [:]
        var trickles: Set<String> = []
        var served: Set<Served> = []
        var requests = 0
        var requestsPerURL: [String: Int] = [:]
        var everFailed: [String: Set<Mode>] = [:]
        var answers: [Mode: Int] = [:]
        var revalidations: [Revalidation: Int] = [:]
        var modifiedRequests = 0
        var encryptedBodies = 0
        var trickledBodies = 0
        var rejectedByHeaderCheck = 0
        /// When requests for a URL (and partition) arrived, in order.
        var arrivals: [String: [Date]] = [:]
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "ModelOrigin", attributes: .concurrent)
    /// Real files served for a path's last component, one per version (cycled); see ``bytes(url:partition:version:)``.
    private let fixtures: [String: [Data]]
    /// The cancel registry of this loader's downloads, shared with the managers that use it.
    public let control = DownloadControl()

    /// An origin where every URL starts healthy at version 0; `fixtures` maps a path's last component to the
    /// files its versions serve (cycled).
    public init(fixtures: [String: [Data]] = [:]) { self.fixtures = fixtures }

    /// Requests so far.
    public var requestCount: Int { state.withLock { $0.requests } }

    /// Requests of `url` so far (whatever a request modifier made of it).
    public func requestCount(for url: URL) -> Int { state.withLock { $0.requestsPerURL[Self.path(url)] ?? 0 } }

    /// Makes `url` answer with new bytes and a new ETag.
    public func bump(_ url: URL) { state.withLock { $0.versions[Self.path(url), default: 0] += 1 } }

    /// The version `url` serves now.
    public func version(of url: URL) -> Int { state.withLock { $0.versions[Self.path(url)] ?? 0 } }

    /// Sets how `url` answers from now on.
    public func set(_ mode: Mode, for url: URL) { state.withLock { $0.modes[Self.path(url)] = mode } }

    /// How `url` answers now.
    public func mode(of url: URL) -> Mode { state.withLock { $0.modes[Self.path(url)] ?? .healthy } }

    /// Makes the bodies of `url` arrive in pieces (progress reports with the bytes so far) or at once.
    public func setTrickle(_ on: Bool, for url: URL) {
        state.withLock { state in
            if on { state.trickles.insert(Self.path(url)) } else { state.trickles.remove(Self.path(url)) }
        }
    }

    /// The body of what was served.
    public func body(of served: Served) -> Data {
        let body = bytes(url: served.url, partition: served.partition, version: served.version)
        return served.truncated ? body.prefix(body.count - 3) : body
    }

    /// The loader's blob (``ImageCore/ResponseMetadata/extendedData``) every 200 carries: what was served, so a checker
    /// can tell that bytes kept with a blob are the bytes that blob came with.
    public static func blob(of served: Served) -> Data {
        Data("\(served.url)|\(served.partition ?? "-")|\(served.version)|\(served.truncated)".utf8)
    }

    /// Every (URL, partition, version) served with a 200 so far, whole or truncated.
    public var served: Set<Served> { state.withLock { $0.served } }

    /// How many requests each mode answered so far (a request cancelled or timed out before its answer counts
    /// for none).
    public var answers: [Mode: Int] { state.withLock { $0.answers } }

    /// How revalidations were answered so far.
    public var revalidations: [Revalidation: Int] { state.withLock { $0.revalidations } }

    /// Requests that revalidated with an ETag the origin no longer serves (its bytes changed since they were
    /// cached).
    public var changedETags: Int { state.withLock { $0.revalidations[.newBytes] ?? 0 } }

    /// What the origin saw of the loads' contexts: requests a modifier rewrote, bodies served encrypted, bodies
    /// that trickled in, transfers the manager's header check refused.
    public var contextEffects: (modified: Int, encrypted: Int, trickled: Int, rejected: Int) {
        state.withLock { ($0.modifiedRequests, $0.encryptedBodies, $0.trickledBodies, $0.rejectedByHeaderCheck) }
    }

    /// When the latest request for `url` and `partition` that arrived before `date` arrived: the earliest a
    /// transfer that ended by `date` can have started (loads wait for a place before their request is sent).
    public func latestRequest(for url: URL, partition: String?, before date: Date) -> Date? {
        state.withLock { $0.arrivals[Self.path(url) + " " + (partition ?? "-")]?.last { $0 <= date } }
    }

    /// The failing modes `url` answered with so far.
    public func failures(of url: URL) -> Set<Mode> { state.withLock { $0.everFailed[Self.path(url)] ?? [] } }

    /// The ETag of `url` at `version` for `partition`.
    public static func etag(version: Int, partition: String?) -> String { "\"v\(version)-\(partition ?? "-")\"" }

    /// Whether the origin says `url`'s images stay fresh (`Cache-Control: max-age=3600`, longer than any program):
    /// `b.timg`, `anim-d.timg` and `color-2.png`; every other URL is answered without a lifetime (stale at once).
    public static func isLongLived(_ url: URL) -> Bool {
        ["b.timg", "anim-d.timg", "color-2.png"].contains(url.lastPathComponent)
    }

    /// The lifetime the origin states for long-lived URLs (``isLongLived(_:)``), seconds.
    public static let longLifetime = 3600

    /// The lifetime the origin states for `url`, seconds: ``longLifetime`` for long-lived URLs, 0 for `a.timg` and
    /// `anim-c.timg` (stale at once, but a 304 renews them: the renewal store runs), none for the others.
    public static func statedLifetime(_ url: URL) -> Int? {
        if isLongLived(url) { return longLifetime }
        return ["a.timg", "anim-c.timg"].contains(url.lastPathComponent) ? 0 : nil
    }

    /// A URL without its query: a request modifier may add one, the origin serves the path.
    static func path(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.query = nil
        return components.string ?? url.absoluteString
    }

    /// The bytes of `url` at `version` for `partition`: a file of ``init(fixtures:)`` when its last path component
    /// has some (the version and the partition pick one), else a test image whose size, frame count and colours
    /// follow from the three (animated when the path contains "anim").
    public func bytes(url: String, partition: String?, version: Int) -> Data {
        let name = URL(string: url)?.lastPathComponent ?? url
        if let files = fixtures[name], !files.isEmpty {
            var hasher = FNV()
            hasher.add(partition ?? "-")
            return files[(version + Int(hasher.value % 7)) % files.count]
        }
        return Self.testBytes(url: url, partition: partition, version: version)
    }

    /// The test image of `url` at `version` for `partition` (see ``bytes(url:partition:version:)``).
    public static func testBytes(url: String, partition: String?, version: Int) -> Data {
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
        Self.deadline(options: options, context: context).map { "\($0)" } ?? ""
    }

    /// The registry of this origin's downloads: the managers' jobs and admission places register here too.
    public func downloadControl(for url: URL) -> DownloadControl? { control }

    /// Cancels every download: transfers in flight and the managers' downloads registered with ``control``.
    @discardableResult
    public func cancelAllDownloads() -> Int { control.cancelAll() }

    /// Cancels the downloads of `url` as the caller gave it (before a request modifier rewrote it).
    @discardableResult
    public func cancelDownloads(for url: URL) -> Int { control.cancel(url: url) }

    /// Answers per the URL's mode and version, within the load's deadline.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        let once = Locked<(@Sendable (Result<LoadedImageData, ImageError>) -> Void)?>(completion)
        let registration = Locked(DownloadControl.Registration.none)
        let complete: @Sendable (Result<LoadedImageData, ImageError>) -> Void = { result in
            let first = once.withLock { pending in
                defer { pending = nil }
                return pending
            }
            registration.value.unregister()
            first?(result)
        }
        let operation = CancellableOperation()
        operation.onCancel { complete(.failure(.cancelled(stage: .download))) }
        registration.withLock {
            $0 = control.register(url: url, stage: .transfer) { operation.cancel() }
        }
        var request = ImageRequest(url: url)
        if let modifier = context.downloadRequestModifier {
            guard let modified = modifier.modifiedRequest(for: request) else {
                complete(.failure(.cancelled(stage: .download)))
                return operation
            }
            request = modified
        }
        let key = Self.path(request.url)
        let partition = context.cachePartitionKey
        let (version, mode, trickles) = state.withLock { state -> (Int, Mode, Bool) in
            state.requests += 1
            state.requestsPerURL[key, default: 0] += 1
            if request.url != url { state.modifiedRequests += 1 }
            state.arrivals[key + " " + (partition ?? "-"), default: []].append(Date())
            return (state.versions[key] ?? 0, state.modes[key] ?? .healthy, state.trickles.contains(key))
        }
        let delay = mode == .slow ? Self.slowDelay : 0.002
        if let deadline = Self.deadline(options: options, context: context), deadline < delay {
            queue.asyncAfter(deadline: .now() + deadline) {
                complete(.failure(ImageError(.timedOut, stage: .download, message: "model deadline")))
            }
            return operation
        }
        let etag = Self.etag(version: version, partition: partition)
        let cachedETag = context.loaderCachedMetadata?.etag
        let answer = Answer(
            url: url, key: key, partition: partition, version: version, mode: mode, etag: etag,
            cachedETag: cachedETag, context: context)
        if trickles, answer.succeeds {
            trickle(answer, delay: delay, operation: operation, progress: progress, complete: complete)
        } else {
            queue.asyncAfter(deadline: .now() + delay) { [self] in
                guard !operation.isCancelled else { return }
                complete(finish(answer))
            }
        }
        return operation
    }

    /// One request's answer, decided when it arrived.
    private struct Answer: Sendable {
        let url: URL
        let key: String
        let partition: String?
        let version: Int
        let mode: Mode
        let etag: String
        let cachedETag: String?
        let context: ImageContext

        /// True when the answer is a 200 with the whole body.
        var succeeds: Bool {
            switch mode {
            case .healthy, .slow, .noStore: cachedETag != etag
            case .notFound, .serverError, .truncated: false
            }
        }
    }

    /// Sends the body in pieces, each reported as progress with the bytes so far, then finishes.
    private func trickle(
        _ answer: Answer, delay: Double, operation: CancellableOperation,
        progress: (@Sendable (LoadProgress) -> Void)?,
        complete: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) {
        let body = bytes(url: answer.key, partition: answer.partition, version: answer.version)
        // The test format shows a partial image once its header and first colour arrived (13 bytes).
        let cuts = body.starts(with: Array("TIMG".utf8)) ? [13, body.count - 1] : [body.count / 3, body.count * 2 / 3]
        state.withLock { $0.trickledBodies += 1 }
        queue.async { [self] in
            // Pieces 10 ms apart: time for the manager to decode a preview of each before the next.
            for cut in cuts where cut > 0 && cut < body.count {
                Thread.sleep(forTimeInterval: 0.01)
                guard !operation.isCancelled else { return }
                let prefix = body.prefix(cut)
                progress?(LoadProgress(receivedBytes: prefix.count, expectedBytes: body.count, partialData: prefix))
            }
            Thread.sleep(forTimeInterval: max(delay, 0.01))
            guard !operation.isCancelled else { return }
            complete(finish(answer))
        }
    }

    /// The result of `answer`, recorded.
    private func finish(_ answer: Answer) -> Result<LoadedImageData, ImageError> {
        let body = bytes(url: answer.key, partition: answer.partition, version: answer.version)
        var response = ResponseMetadata(
            url: answer.url, statusCode: 200, contentType: "application/octet-stream", etag: answer.etag)
        var result: Result<LoadedImageData, ImageError>
        switch answer.mode {
        case .notFound: result = .failure(.invalidDownloadStatusCode(404))
        case .serverError: result = .failure(.invalidDownloadStatusCode(500))
        case .truncated:
            response.extendedData = Self.blob(
                of: Served(url: answer.key, partition: answer.partition, version: answer.version, truncated: true))
            result = .success(LoadedImageData(data: body.prefix(body.count - 3), response: response))
        case .healthy, .slow, .noStore:
            if answer.cachedETag == answer.etag {
                result = .failure(ImageError(.cacheNotModified, stage: .download))
            } else {
                if answer.mode == .noStore {
                    response.headers["cache-control"] = "no-store"
                } else if let lifetime = Self.statedLifetime(answer.url) {
                    response.headers["cache-control"] = "max-age=\(lifetime)"
                    response.maxAge = lifetime
                }
                response.extendedData = Self.blob(
                    of: Served(url: answer.key, partition: answer.partition, version: answer.version, truncated: false))
                result = .success(LoadedImageData(data: body, response: response))
            }
        }
        result = personalize(result, context: answer.context)
        state.withLock { state in
            state.answers[answer.mode, default: 0] += 1
            if answer.cachedETag != nil {
                switch answer.mode {
                case .healthy, .slow, .noStore:
                    state.revalidations[answer.cachedETag == answer.etag ? .notModified : .newBytes, default: 0] += 1
                case .serverError:
                    state.revalidations[.serverError, default: 0] += 1
                case .notFound, .truncated:
                    state.revalidations[.failed, default: 0] += 1
                }
            }
            switch answer.mode {
            case .healthy, .slow, .noStore:
                if answer.cachedETag != answer.etag {
                    state.served.insert(
                        Served(url: answer.key, partition: answer.partition, version: answer.version, truncated: false))
                }
            case .truncated:
                state.served.insert(
                    Served(url: answer.key, partition: answer.partition, version: answer.version, truncated: true))
                state.everFailed[answer.key, default: []].insert(answer.mode)
            case .notFound, .serverError:
                state.everFailed[answer.key, default: []].insert(answer.mode)
            }
        }
        return result
    }

    /// What a loader does with a body for this load's context: the response modifier, the manager's header check,
    /// and the decryptor of a body served encrypted.
    private func personalize(_ result: Result<LoadedImageData, ImageError>, context: ImageContext)
        -> Result<LoadedImageData, ImageError>
    {
        guard case .success(var loaded) = result else { return result }
        if let modifier = context.downloadResponseModifier {
            guard let response = modifier.modifiedResponse(for: loaded.response) else {
                return .failure(ImageError(.cancelled, stage: .download, message: "the response modifier refused"))
            }
            loaded.response = response
        }
        if let check = context.downloadHeaderCheck, case .reject(let error) = check(loaded.data) {
            state.withLock { $0.rejectedByHeaderCheck += 1 }
            return .failure(error)
        }
        if let decryptor = context.downloadDecryptor {
            state.withLock { $0.encryptedBodies += 1 }
            let encrypted = Data(loaded.data.map { $0 ^ Self.encryptionMask })
            guard let data = decryptor.decryptedData(with: encrypted, response: loaded.response) else {
                return .failure(ImageError(.badImageData, stage: .download, message: "the decryptor returned nil"))
            }
            loaded.data = data
        }
        return .success(loaded)
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
