import Foundation
import ImageTestSupport
import WebImage

@testable import ImageCore

/// The checks of one program's loads against the reference (``ModelReference``), and what the program did that
/// explains a failure: the origin's answers, the load's own options, the controls used on its wave, the verdicts
/// that may have put its URL on a manager's failed list.
final class ModelChecker: Sendable {
    let world: ModelWorld
    let reference: ModelReference
    /// Failures that may block a URL for everyone (a permanent error of a load whose options, as declared, can't
    /// change that verdict), per manager: the URL and when the load ran.
    private let verdicts = Locked<[ObjectIdentifier: [(url: URL, start: Date, transfer: Bool)]]>([:])
    /// How long after its deadline a load may end.
    static let slack = 1.0

    init(world: ModelWorld) {
        self.world = world
        reference = ModelReference(world: world)
    }

    /// The declared effects of everything `spec` set.
    static func effects(of spec: LoadSpec) -> OptionEffect {
        let traits = Dictionary(OptionDraws.catalog.map { ($0.id, $0.traits) }, uniquingKeysWith: { first, _ in first })
        var effects: OptionEffect = []
        // `imageDecodeOptions` declares the union of its fields; what a load set is in the fields it drew.
        // An option declared to act only with a flag changes nothing drawn without it (the scale-down limit without
        // `.scaleDownLargeImages`, seed 3069083848859991255).
        for id in spec.drawn where id != "contextKey imageDecodeOptions" {
            effects.formUnion(traits[id]?.effects(with: spec.options) ?? [])
        }
        for flag in spec.options.flags { effects.formUnion(flag.traits.effects) }
        // A thumbnail or transformer a draw added to give its option something to act on.
        if spec.context.imageThumbnailPixelSize != nil { effects.insert(.pixels) }
        return effects
    }

    /// True when `error` of `spec` is a verdict every load of the URL would reach, by the declarations: a status
    /// verdict unless an option changes the bytes fetched; a verdict on the bytes unless one changes the bytes,
    /// the pixels or a budget.
    static func isUniversalVerdict(_ error: ImageError, of spec: LoadSpec) -> Bool {
        guard ImageLoaderPolicy.isPermanentFailure(error) else { return false }
        let effects = effects(of: spec)
        switch error.code {
        case .imageTooLarge, .badImageData, .noCoder:
            return effects.isDisjoint(with: [.bytesFetched, .pixels, .budget])
        default: return !effects.contains(.bytesFetched)
        }
    }

    /// True when the load may have put its URL on its manager's failed list: it failed with a universal verdict,
    /// or it was cancelled while its job may have reached one (its job's decode of truncated bytes, or a 404, goes
    /// on when the load leaves). A load ended by its own deadline left its job the same way, through the cancel path.
    func mayHaveBlocked(_ spec: LoadSpec, _ record: LoadRecord) -> Bool {
        guard case .failure(let error)? = record.summary.0 else { return false }
        let expired = error.code == .timedOut && error.stage == .request && spec.context.loadTimeout != nil
        guard error.code == .cancelled || expired else { return Self.isUniversalVerdict(error, of: spec) }
        let failures = world.origin.failures(of: spec.url)
        return
            (failures.contains(.truncated)
            && Self.isUniversalVerdict(ImageError(.badImageData, stage: .decode), of: spec))
            || (failures.contains(.notFound) && Self.isUniversalVerdict(.invalidDownloadStatusCode(404), of: spec))
    }

    /// True when the load may have put its URL on its manager's failed list for a verdict on the transfer (a 404),
    /// which blocks data loads too; a verdict on the bytes (undecodable, too large) blocks only image loads.
    func mayHaveBlockedTransfer(_ spec: LoadSpec, _ record: LoadRecord) -> Bool {
        guard case .failure(let error)? = record.summary.0 else { return false }
        let expired = error.code == .timedOut && error.stage == .request && spec.context.loadTimeout != nil
        guard error.code == .cancelled || expired else {
            return Self.isUniversalVerdict(error, of: spec) && ImageManager.failedURLVerdict(of: error) == .transfer
        }
        return world.origin.failures(of: spec.url).contains(.notFound)
            && Self.isUniversalVerdict(.invalidDownloadStatusCode(404), of: spec)
    }

    /// Remembers the wave's possible verdicts, per manager.
    func recordVerdicts(_ loads: [(LoadSpec, LoadRecord)], manager: (Int) -> ImageManager) {
        for (spec, record) in loads where mayHaveBlocked(spec, record) {
            let id = ObjectIdentifier(manager(spec.replica))
            let transfer = mayHaveBlockedTransfer(spec, record)
            verdicts.withLock { $0[id, default: []].append((spec.url, record.startedAt, transfer)) }
        }
    }

    /// Checks load `index` of a wave: one final result; an image the reference gives for a version the origin
    /// served; a failure something explains; previews that carry the final image's options; what a target shows.
    func check(
        _ index: Int, loads: [(LoadSpec, LoadRecord)], controls: [ControlEvent], manager: ImageManager,
        target: ModelTarget?, label: String
    ) -> [String] {
        let (spec, record) = loads[index]
        var messages: [String] = []
        let (result, start, end, cancelled) = record.summary
        // A deadline is the transfer's: it runs from the origin's receipt of the request (a load may wait for a
        // place ahead of the decoder before that, as it would in a loader's own queue).
        if let deadline = spec.deadline, spec.cancelAfter == nil {
            let sent = max(
                start, world.origin.latestRequest(for: spec.url, partition: spec.partition, before: end) ?? start)
            let elapsed = end.timeIntervalSince(sent)
            if elapsed > deadline + Self.slack {
                messages.append("\(label): took \(elapsed) s after its request, past its \(deadline) s deadline")
            }
        }
        // The load's own deadline runs from its call, every wait included; only it ends a load `timedOut` at
        // stage `request`, and never before it passed.
        if let timeout = spec.context.loadTimeout {
            let elapsed = end.timeIntervalSince(start)
            if elapsed > timeout + Self.slack {
                messages.append("\(label): took \(elapsed) s, past its \(timeout) s load timeout")
            }
            if case .failure(let error)? = result, error.code == .timedOut, error.stage == .request,
                elapsed < timeout - 0.01
            {
                messages.append("\(label): ended timedOut after \(elapsed) s, before its \(timeout) s load timeout")
            }
        }
        if spec.dataOnly {
            return messages + checkData(index, loads: loads, controls: controls, manager: manager, label: label)
        }
        guard let result else { return ["\(label): no result"] }
        if let cached = record.cachedFirst {
            if !spec.options.contains(.refreshCached) {
                messages.append("\(label): a non-final cached image without .refreshCached")
            } else if reference.acceptable(spec, cacheType: cached.cacheType)[Signature(cached.image)] == nil {
                messages.append(
                    "\(label): the cached image before revalidation is \(Signature(cached.image)), no version's")
            }
        }
        switch result {
        case .success(let loaded):
            if cancelled { messages.append("\(label): cancelled, yet delivered an image") }
            // `.refreshStale` serves an entry as it is only while it is fresh: only the origin's long-lived URLs
            // ever are; any other entry is revalidated first (a 304, or new bytes), or kept by `.fromCacheOnly`.
            if spec.options.contains(.refreshStale), !spec.options.contains(.refreshCached),
                loaded.cacheType != .none, !loaded.isNotModified, !ModelOrigin.isLongLived(spec.url)
            {
                messages.append(
                    "\(label): .refreshStale served a \(loaded.cacheType) entry that no answer said is fresh, "
                        + "without revalidating it")
            }
            let got = Signature(loaded.image)
            let acceptable = reference.acceptable(spec, cacheType: loaded.cacheType)
            if acceptable[got] == nil {
                messages.append(
                    "\(label): delivered \(got) (\(loaded.cacheType)\(loaded.isNotModified ? ", 304" : "")); "
                        + "reference \(acceptable.map { "v\($0.value) \($0.key)" }.sorted())" + diagnosis(spec, got)
                        + neighbours(index, loads: loads))
            }
            messages += checkPreviews(spec, record.previews, final: loaded.image, label: label)
            if let target {
                let shown = target.displayed.map(Signature.init)
                let expected: Signature? =
                    spec.options.contains(.avoidAutoSetImage)
                    ? (spec.options.contains(.delayPlaceholder) ? nil : Signature(ModelTarget.placeholder)) : got
                if shown != expected {
                    messages.append(
                        "\(label): the target shows \(shown.map { "\($0)" } ?? "nothing"), not \(expected.map { "\($0)" } ?? "nothing")"
                    )
                }
            }
        case .failure(let error):
            if cancelled, error.code != .cancelled { messages.append("\(label): cancelled, completed with \(error)") }
            messages += checkPreviews(spec, record.previews, final: nil, label: label)
            if !explains(error, index: index, loads: loads, controls: controls, manager: manager) {
                let versions = 0...world.origin.version(of: spec.url)
                let expected = versions.map { "v\($0) \(reference.expected(spec, version: $0))" }
                messages.append(
                    "\(label): failed with \(error), which nothing in the program explains (reference \(expected))"
                        + neighbours(index, loads: loads))
            }
            if let target, error.code != .cancelled, spec.options.contains(.delayPlaceholder),
                target.displayed.map(Signature.init) != Signature(ModelTarget.placeholder)
            {
                messages.append("\(label): failed with .delayPlaceholder, yet the target doesn't show the placeholder")
            }
        }
        return messages
    }

    /// A data load: the body of a version the origin served for its partition, as served (or cut short, as served),
    /// with no preview, or a failure the program explains that no decode, budget or transform made — what image
    /// loads sharing its transfer do never reaches it.
    private func checkData(
        _ index: Int, loads: [(LoadSpec, LoadRecord)], controls: [ControlEvent], manager: ImageManager, label: String
    ) -> [String] {
        let (spec, record) = loads[index]
        var messages: [String] = []
        if !record.previews.isEmpty || record.cachedFirst != nil { messages.append("\(label): a non-final delivery") }
        if let loaded = record.data {
            if record.summary.3 { messages.append("\(label): cancelled, yet delivered bytes") }
            let served = world.origin.served.filter {
                $0.url == spec.url.absoluteString && $0.partition == spec.partition
            }
            if !served.contains(where: { world.origin.body(of: $0) == loaded.data }) {
                messages.append(
                    "\(label): delivered \(loaded.data.count) bytes that are no body the origin served for its "
                        + "partition (served: \(served.map { "v\($0.version)\($0.truncated ? " cut" : "")" }.sorted()))"
                )
            }
            if loaded.url != spec.url { messages.append("\(label): the result names \(loaded.url)") }
            // The loader's blob travels with the bytes it came with: from the origin, from the cache, after a 304.
            let cameWith = { (blob: Data) in
                served.contains { ModelOrigin.blob(of: $0) == blob && self.world.origin.body(of: $0) == loaded.data }
            }
            if let blob = loaded.response.extendedData, !cameWith(blob) {
                messages.append(
                    "\(label): delivered bytes with the blob \(String(decoding: blob, as: UTF8.self)), which came with "
                        + "other bytes")
            } else if loaded.response.extendedData == nil {
                messages.append("\(label): bytes (\(loaded.cacheType)) without the blob the origin sent with them")
            }
            // `.fromLoaderOnly` is never answered by the cache, however the load reached it.
            if spec.options.contains(.fromLoaderOnly), loaded.cacheType != .none {
                messages.append("\(label): .fromLoaderOnly answered from the cache (\(loaded.cacheType))")
            }
            // A load that says it joined another load's transfer had one to join: the loader's answer (or a 304's),
            // while another load of the URL ran.
            if loaded.joinedTransfer {
                if loaded.cacheType != .none, !loaded.isNotModified {
                    messages.append("\(label): a \(loaded.cacheType) answer that says it joined a transfer")
                }
                if !loads.indices.contains(where: { $0 != index && loads[$0].0.url == spec.url }) {
                    messages.append("\(label): joined a transfer, yet no other load of its URL ran")
                }
            }
            // Kept bytes (`.refreshStale`) are the answer unrevalidated only while fresh, or with `.fromCacheOnly`.
            if spec.options.contains(.refreshStale), spec.options.isDisjoint(with: [.refreshCached, .fromCacheOnly]),
                loaded.cacheType != .none, !loaded.isNotModified, !ModelOrigin.isLongLived(spec.url)
            {
                messages.append(
                    "\(label): .refreshStale answered with \(loaded.cacheType) bytes that no answer said are fresh, "
                        + "without revalidating them")
            }
            if !spec.options.contains(.refreshStale) || spec.options.contains(.refreshCached),
                loaded.cacheType != .none || loaded.isNotModified
            {
                messages.append("\(label): bytes from the cache (\(loaded.cacheType)) without .refreshStale")
            }
            return messages
        }
        guard case .failure(let error)? = record.summary.0 else { return messages + ["\(label): no result"] }
        if record.summary.3, error.code != .cancelled {
            messages.append("\(label): cancelled, completed with \(error)")
        }
        let decodeCodes: Set<ImageError.Code> = [.imageTooLarge, .noCoder, .transformFailed, .encodeFailed]
        if decodeCodes.contains(error.code) || error.stage == .decode {
            messages.append("\(label): failed with \(error): an image's verdict reached a data load")
        } else if error.code == .blockedURL {
            // Only a verdict on the transfer blocks a data load.
            let id = ObjectIdentifier(manager)
            let blocked =
                !spec.options.contains(.retryFailed)
                && (verdicts.withLock { $0[id] ?? [] }.contains { $0.url == spec.url && $0.transfer }
                    || loads.contains { other, otherRecord in
                        other.url == spec.url && other.replica == spec.replica
                            && otherRecord.startedAt <= record.endedAt && mayHaveBlockedTransfer(other, otherRecord)
                    })
            if !blocked {
                messages.append(
                    "\(label): blocked, and no verdict on the transfer explains it" + neighbours(index, loads: loads))
            }
        } else if !explains(error, index: index, loads: loads, controls: controls, manager: manager) {
            messages.append(
                "\(label): failed with \(error), which nothing in the program explains"
                    + neighbours(index, loads: loads))
        }
        return messages
    }

    /// The wave's other loads of the same URL, for a message.
    private func neighbours(_ index: Int, loads: [(LoadSpec, LoadRecord)]) -> String {
        let (spec, _) = loads[index]
        let others = loads.indices.filter { $0 != index && loads[$0].0.url == spec.url }.map { other in
            if let data = loads[other].1.data {
                return "load \(other) [\(loads[other].0)] → \(data.data.count) bytes"
            }
            let result = loads[other].1.summary.0.map { result -> String in
                switch result {
                case .success(let loaded): "\(Signature(loaded.image)) \(loaded.cacheType)"
                case .failure(let error): "\(error.code)"
                }
            }
            return "load \(other) [\(loads[other].0)] → \(result ?? "-")"
        }
        return others.isEmpty ? "" : "; the wave's other loads of the URL: " + others.joined(separator: "; ")
    }

    /// Whose image `got` is, when it is another partition's or another version's.
    private func diagnosis(_ spec: LoadSpec, _ got: Signature) -> String {
        for served in world.origin.served where served.url == spec.url.absoluteString {
            if case .image(got) = reference.expected(spec, version: served.version, partition: served.partition) {
                return "; it is partition \(served.partition ?? "-")'s v\(served.version)"
            }
        }
        var plain = LoadSpec(url: spec.url)
        plain.context.cachePartitionKey = spec.partition
        for served in world.origin.served where served.url == spec.url.absoluteString {
            if case .image(got) = reference.expected(plain, version: served.version, partition: served.partition) {
                return "; it is the plain decode of v\(served.version)"
            }
        }
        return ""
    }

    /// Previews go only to progressive loads, are marked partial, and carry what the final image got: its size,
    /// its colour conversion, its transform.
    private func checkPreviews(_ spec: LoadSpec, _ previews: [Image], final: Image?, label: String) -> [String] {
        guard !previews.isEmpty else { return [] }
        guard spec.options.contains(.progressiveLoad) else {
            return ["\(label): \(previews.count) previews without .progressiveLoad"]
        }
        var messages: [String] = []
        for (number, preview) in previews.enumerated() {
            let name = "\(label): preview \(number)"
            if !preview.metadata.isPartial { messages.append("\(name) is not marked partial") }
            guard let final else { continue }
            if preview.width != final.width || preview.height != final.height {
                messages.append(
                    "\(name) is \(preview.width)x\(preview.height), the final image \(final.width)x\(final.height)")
            }
            if final.metadata.isTransformed != preview.metadata.isTransformed {
                messages.append(
                    "\(name) transformed: \(preview.metadata.isTransformed), the final image: \(final.metadata.isTransformed)"
                )
            }
            if spec.decodeOptions.convertToSRGB, final.metadata.iccProfile == nil, preview.metadata.iccProfile != nil {
                messages.append("\(name) keeps the file's colour profile; the final image was converted")
            }
        }
        return messages
    }

    /// True when something in the program explains `error` of load `index`.
    private func explains(
        _ error: ImageError, index: Int, loads: [(LoadSpec, LoadRecord)], controls: [ControlEvent],
        manager: ImageManager
    ) -> Bool {
        let (spec, record) = loads[index]
        let failures = world.origin.failures(of: spec.url)
        switch error.code {
        case .cancelled:
            return isCancelled(index, loads: loads, controls: controls)
        case .timedOut:
            return error.stage == .request ? spec.context.loadTimeout != nil : spec.deadline != nil
        case .invalidDownloadStatusCode:
            return error.statusCode == 404 ? failures.contains(.notFound) : failures.contains(.serverError)
        case .badImageData:
            return failures.contains(.truncated) || reference.failureCodes(spec).contains(.badImageData)
        case .imageTooLarge, .noCoder, .transformFailed:
            return reference.failureCodes(spec).contains(error.code)
        case .blockedURL:
            guard !spec.options.contains(.retryFailed) else { return false }
            let id = ObjectIdentifier(manager)
            return verdicts.withLock { $0[id] ?? [] }.contains { $0.url == spec.url }
                || loads.contains { other, otherRecord in
                    other.url == spec.url && other.replica == spec.replica && otherRecord.startedAt <= record.endedAt
                        && mayHaveBlocked(other, otherRecord)
                }
        case .cacheMiss:
            return spec.options.contains(.fromCacheOnly)
        case .cacheNotModified:
            return spec.context.loaderCachedMetadata != nil
                || spec.options.isSuperset(of: [.refreshCached, .fromCacheOnly])
        default:
            return false
        }
    }

    /// A cancel of this load, a control that cancels loads or downloads of its URL while it ran, or a later load
    /// on the same target and operation key that supersedes it.
    private func isCancelled(_ index: Int, loads: [(LoadSpec, LoadRecord)], controls: [ControlEvent]) -> Bool {
        let (spec, record) = loads[index]
        if spec.cancelAfter != nil { return true }
        for event in controls where record.startedAt <= event.end && record.endedAt >= event.begin {
            switch event.control {
            case .cancelAllLoads: if event.replica == spec.replica { return true }
            case .cancelAllDownloads: return true
            case .cancelDownloadsForURL: if event.url == spec.url { return true }
            default: break
            }
        }
        guard let target = spec.target else { return false }
        return loads.contains { other, otherRecord in
            guard let otherTarget = other.target, otherTarget.index == target.index, otherTarget.key == target.key
            else { return false }
            return otherRecord !== record && otherRecord.startedAt >= record.startedAt
                && otherRecord.startedAt <= record.endedAt
                && !other.options.contains(.avoidAutoCancelImage)
        }
    }
}

/// The manager's cache, counting the queries that missed (each leaves a claim the manager must end) and their ends.
///
/// A claiming query's miss is a claim. A synchronous miss is one when it is the manager's memory fast path with
/// levels beyond memory, and may be one when it asks memory alone (a load whose `queryCacheType` is memory only
/// claims it; the manager's recheck before a download asks the same and claims nothing): those count as possible
/// claims, so ends must lie between the certain claims and the certain plus the possible ones.
final class MissLedger: ImageCacheProtocol, Sendable {
    private let inner: CachesManager
    private let counts = Locked((missed: 0, possible: 0, ended: 0))
    private let storeFailures = Locked(0)

    /// Stores a level refused (a failing disk's), as the manager saw them.
    var failedStores: Int { storeFailures.value }

    init(_ inner: CachesManager) { self.inner = inner }

    /// Claims not yet ended (negative: ended more often than claimed), counting possible claims as none; zero
    /// when the ends are within the possible ones.
    var open: Int {
        counts.withLock { counts in
            if counts.ended < counts.missed { return counts.missed - counts.ended }
            return counts.ended > counts.missed + counts.possible ? counts.missed + counts.possible - counts.ended : 0
        }
    }

    func queryImage(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        inner.queryImage(forKey: key, options: options, context: context, cacheType: cacheType, completion: completion)
    }

    /// The manager's claiming queries: each miss is a claim it must end once.
    func queryImageClaimingMiss(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType,
        completion: @escaping @Sendable (Result<CacheQueryResult?, ImageError>) -> Void
    ) -> (any ImageOperation)? {
        inner.queryImageClaimingMiss(forKey: key, options: options, context: context, cacheType: cacheType) {
            result in
            let missed: Bool
            switch result {
            case .success(let hit): missed = hit == nil || (hit?.image == nil && hit?.data == nil)
            case .failure(let error): missed = !error.isCancellation
            }
            if missed { self.counts.withLock { $0.missed += 1 } }
            completion(result)
        }
    }

    func queryImageSync(forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType)
        -> SyncCacheQueryResult
    {
        let answer = inner.queryImageSync(forKey: key, options: options, context: context, cacheType: cacheType)
        if case .miss = answer {
            counts.withLock { counts in
                if cacheType.subtracting(.memory).isEmpty { counts.possible += 1 } else { counts.missed += 1 }
            }
        }
        return answer
    }

    func store(
        _ image: Image?, data: Data?, metadata: CacheEntryMetadata?, forKey key: String, cacheType: ImageCacheType,
        completion: (@Sendable (Result<Void, ImageError>) -> Void)?
    ) {
        inner.store(image, data: data, metadata: metadata, forKey: key, cacheType: cacheType) { result in
            if case .failure = result { self.storeFailures.withLock { $0 += 1 } }
            completion?(result)
        }
    }

    func removeImage(forKey key: String, cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        inner.removeImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    func containsImage(
        forKey key: String, cacheType: ImageCacheType, completion: @escaping @Sendable (ImageCacheType) -> Void
    ) {
        inner.containsImage(forKey: key, cacheType: cacheType, completion: completion)
    }

    func clear(cacheType: ImageCacheType, completion: (@Sendable () -> Void)?) {
        inner.clear(cacheType: cacheType, completion: completion)
    }

    func missEnded(forKey key: String, cacheType: ImageCacheType, outcome: CacheMissOutcome) {
        counts.withLock { $0.ended += 1 }
        inner.missEnded(forKey: key, cacheType: cacheType, outcome: outcome)
    }
}
