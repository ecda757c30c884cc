import Foundation
import Synchronization

/// The main line of the SDK: URL → cache query → download → decode → transform → store → completion.
///
/// Every stage is a plugin: the cache (``ImageCacheProtocol``), the loader (``ImageLoader``), the coders
/// (``CodersManager``), the transformer, cache-key filter, serializer and options processor. Identical work is
/// done once: concurrent loads of one URL share one download and one decode per distinct decode options, and one
/// transform + store per distinct transformer; cancelling one load only detaches it.
///
/// Threading: every method is thread-safe. `loadImage` returns quickly; memory hits complete before it returns.
/// Decoding, transforming and serializing run on ``WorkPool/cpu`` (bounded, never the cooperative pool); cache
/// I/O runs on the caches' queues; callbacks go to the context's ``CallbackQueue`` (default ``CallbackQueue/current``).
public final class ImageManager: Sendable {
    private struct Defaults: Sendable {
        var cache: (any ImageCacheProtocol)?
        var loader: (any ImageLoader)?
    }

    private static let defaults = Locked(Defaults())

    /// The cache a manager created without arguments uses (default: an empty ``CachesManager``, i.e. no caching).
    ///
    /// Set it before the first use of ``shared``: the shared manager reads it once, when created.
    public static var defaultImageCache: any ImageCacheProtocol {
        get { defaults.withLock { $0.cache } ?? CachesManager() }
        set { defaults.withLock { $0.cache = newValue } }
    }

    /// The loader a manager created without arguments uses (default: ``LoadersManager/shared``).
    public static var defaultImageLoader: any ImageLoader {
        get { defaults.withLock { $0.loader } ?? LoadersManager.shared }
        set { defaults.withLock { $0.loader = newValue } }
    }

    /// The shared manager, created on first use from ``defaultImageCache`` and ``defaultImageLoader``.
    public static let shared = ImageManager()

    /// The cache of this manager.
    public let imageCache: any ImageCacheProtocol
    /// The loader of this manager.
    public let imageLoader: any ImageLoader
    /// The coders this manager decodes with (when a load's context names no ``ImageContext/imageCoder``) and
    /// its default serializer encodes with. Managers may have registries of their own, so two managers in one
    /// process can decode different formats.
    public let coders: CodersManager

    struct Settings: Sendable {
        var transformer: (any Transformer)?
        /// `transformer?.transformerKey`, read when the transformer was set (outside the lock: it is user code).
        var transformerKey: String?
        var cacheKeyFilter: (any CacheKeyFilter)?
        var cacheSerializer: (any CacheSerializer)?
        var optionsProcessor: (any OptionsProcessor)?
        /// What every load reads, rebuilt when one of the fields above changes.
        var load = LoadSettings(contextDefaults: nil, optionsProcessor: nil)
        var cachesPrivateResponses = false
        var storesIncompleteImages = false
        weak var delegate: (any ImageManagerDelegate)?
        var log: @Sendable (String) -> Void = { message in
            FileHandle.standardError.write(Data("[ImageManager] \(message)\n".utf8))
        }
    }

    let settings = Locked(Settings())

    /// What every load reads from the settings, as one immutable snapshot: one lock and one retain per load.
    final class LoadSettings: Sendable {
        /// The transformer, filter and serializer layered under every load's context; nil when none is set.
        let contextDefaults: ContextDefaults?
        let optionsProcessor: (any OptionsProcessor)?
        /// `optionsProcessor != nil`, without copying the existential out to find out.
        let hasOptionsProcessor: Bool

        init(contextDefaults: ContextDefaults?, optionsProcessor: (any OptionsProcessor)?) {
            self.contextDefaults = contextDefaults
            self.optionsProcessor = optionsProcessor
            hasOptionsProcessor = optionsProcessor != nil
        }
    }

    var loadSettings: LoadSettings { settings.withLock { $0.load } }

    /// The settings every load reads, or nil when the manager has none of them (no transformer, filter,
    /// serializer or options processor: most managers), which a load then learns without taking the lock.
    var loadSettingsIfAny: LoadSettings? {
        guard hasLoadSettings.load(ordering: .acquiring) else { return nil }
        return loadSettings
    }

    /// True once a transformer, filter, serializer or options processor was set (stored under the settings' lock).
    private let hasLoadSettings = Atomic<Bool>(false)

    private func updateSettings(_ change: (inout Settings) -> Void) {
        settings.withLock { settings in
            change(&settings)
            let defaults = ContextDefaults(
                transformer: settings.transformer, transformerKey: settings.transformerKey,
                cacheKeyFilter: settings.cacheKeyFilter, cacheSerializer: settings.cacheSerializer)
            settings.load = LoadSettings(
                contextDefaults: defaults.isEmpty ? nil : defaults, optionsProcessor: settings.optionsProcessor)
            hasLoadSettings.store(
                !defaults.isEmpty || settings.optionsProcessor != nil, ordering: .releasing)
        }
    }
    let failedURLs = Locked(FailedURLList())
    /// `failedURLs.count`, stored after every change under its lock: every load reads it, and most managers never
    /// block a URL, so the common answer takes no lock.
    let failedURLCount = Atomic<Int>(0)

    /// Changes the failed-URL list under its lock and publishes its new size.
    func updateFailedURLs(_ change: (inout FailedURLList) -> Void) {
        failedURLs.withLock { list in
            change(&list)
            failedURLCount.store(list.count, ordering: .releasing)
        }
    }
    /// The failed-URL list's clock (tests move it instead of sleeping).
    let failedURLClock = Locked<@Sendable () -> Date>({ Date() })
    /// Running fetch jobs by key, and when each key's last job ended (see `subscribe`).
    struct JobRegistry: Sendable {
        var jobs: [String: FetchJob] = [:]
        var generation: UInt64 = 0
        var endedAt: [String: UInt64] = [:]
        /// Generation of the last pruning of `endedAt`; a key looked at before it may have ended unseen.
        var prunedAt: UInt64 = 0

        /// True when a job under `key` ended after generation `seen`.
        func ended(_ key: String, since seen: UInt64) -> Bool {
            (endedAt[key] ?? 0) > seen || prunedAt > seen
        }

        mutating func recordEnd(_ key: String) {
            generation &+= 1
            if endedAt.count >= 4096 {
                endedAt.removeAll(keepingCapacity: true)
                prunedAt = generation
            }
            endedAt[key] = generation
        }
    }

    let jobs = Locked(JobRegistry())
    let running = Locked([ObjectIdentifier: ImageLoadOperation]())
    let idSource = Locked<UInt64>(0)
    let counters = Locked(ImageManagerStatistics())

    /// The pool that runs this manager's decodes, transforms and serializer encodes.
    public let workPool: WorkPool
    /// Admits downloads while fewer than ``maxDownloadsAheadOfDecoding`` are ahead of the decoder.
    /// The renewals of kept entries, so the loads one 304 answered renew the entry once.
    let keptRenewals = KeptRenewals()
    let downloadAdmission = DownloadAdmission(limit: ImageManager.defaultMaxDownloadsAheadOfDecoding)

    /// The default of ``maxDownloadsAheadOfDecoding``: 64.
    public static let defaultMaxDownloadsAheadOfDecoding = 64

    /// The most downloads this manager keeps ahead of its decoder: started (in flight, or finished with their
    /// bytes waiting for a decode thread) and not yet decoded. Further downloads wait to start, by priority and
    /// then first come first served; cancelling one that waits ends its load at once. `Int.max` turns it off.
    ///
    /// A burst of loads finishes downloading far faster than a few threads decode, and every finished download
    /// holds its bytes until its decode starts: without a bound, a crawler's 100,000 queued URLs would hold
    /// 100,000 bodies (1,000 concurrent loads of 2 MP photos: Benchmarks/RESULTS.md, issue 23 item 7). The
    /// default costs no throughput while it is at least the loader's own concurrency plus the decode threads
    /// (`HTTPLoader` runs 6 transfers at once by default): raise it with the loader's concurrency.
    ///
    /// Time spent waiting here is waiting for a place, like the time a download waits in its loader's own queue:
    /// a loader's transfer deadline (`HTTPLoader`'s `maximumTransferDuration`) starts when the loader gets the
    /// request, not when the load began. A load that must end by a given time sets ``ImageContext/loadTimeout``:
    /// its wait here counts against it, and a load that waits past it ends `timedOut` without a download.
    /// Changing the bound applies at once.
    public var maxDownloadsAheadOfDecoding: Int {
        get { downloadAdmission.limit }
        set { downloadAdmission.limit = newValue }
    }
    /// `imageCache` and `imageLoader` opened for the calls every load makes.
    let strategies: ManagerStrategies

    /// Creates a manager over `cache` and `loader`, decoding with `coders` (default ``CodersManager/shared``);
    /// CPU work runs on `workPool` (default ``WorkPool/cpu``).
    public init(
        cache: any ImageCacheProtocol, loader: any ImageLoader, coders: CodersManager = .shared,
        workPool: WorkPool = .cpu
    ) {
        self.imageCache = cache
        self.imageLoader = loader
        self.strategies = .make(cache: cache, loader: loader)
        self.coders = coders
        self.workPool = workPool
    }

    /// Creates a manager from ``defaultImageCache`` and ``defaultImageLoader``.
    public convenience init() {
        self.init(cache: ImageManager.defaultImageCache, loader: ImageManager.defaultImageLoader)
    }

    /// The transformer applied to every load whose context names none.
    ///
    /// Its ``Transformer/transformerKey`` is read once, here.
    public var transformer: (any Transformer)? {
        get { settings.withLock { $0.transformer } }
        set {
            let key = newValue?.transformerKey
            updateSettings {
                $0.transformer = newValue
                $0.transformerKey = key
            }
        }
    }
    /// The cache-key filter for loads whose context names none.
    public var cacheKeyFilter: (any CacheKeyFilter)? {
        get { settings.withLock { $0.cacheKeyFilter } }
        set { updateSettings { $0.cacheKeyFilter = newValue } }
    }
    /// The serializer for loads whose context names none (default: ``DefaultCacheSerializer``).
    public var cacheSerializer: (any CacheSerializer)? {
        get { settings.withLock { $0.cacheSerializer } }
        set { updateSettings { $0.cacheSerializer = newValue } }
    }
    /// Rewrites options and context of every load, after the manager's defaults are merged.
    public var optionsProcessor: (any OptionsProcessor)? {
        get { settings.withLock { $0.optionsProcessor } }
        set { updateSettings { $0.optionsProcessor = newValue } }
    }
    /// Vetoes downloads and overrides failed-URL decisions; held weakly.
    public var delegate: (any ImageManagerDelegate)? {
        get { settings.withLock { $0.delegate } }
        set { settings.withLock { $0.delegate = newValue } }
    }
    /// Whether responses marked `Cache-Control: private` are stored in this manager's caches (default false).
    ///
    /// A private response was meant for one user; a server that loads for many users must not serve it to
    /// others. Turn it on for a single-user tool. `no-store` responses are never stored.
    public var cachesPrivateResponses: Bool {
        get { settings.withLock { $0.cachesPrivateResponses } }
        set { settings.withLock { $0.cachesPrivateResponses = newValue } }
    }
    /// Whether an image decoded from bytes that end before the image does (a truncated download:
    /// ``ImageMetadata/isIncomplete``) is stored like a whole one (default false).
    ///
    /// By default such a load still delivers what was decoded — grey or missing rows, marked
    /// ``ImageResult/isIncomplete`` — but nothing of it is kept: neither the cut bytes under the original's key nor
    /// the image under the load's, so the next load fetches again (the key means the whole image). A cached entry
    /// that turns out cut short is healed like an undecodable one. Turn this on for the old behaviour (keep what
    /// arrived).
    public var storesIncompleteImages: Bool {
        get { settings.withLock { $0.storesIncompleteImages } }
        set { settings.withLock { $0.storesIncompleteImages = newValue } }
    }
    /// Counts of what the manager did beside loading (a snapshot).
    public var statistics: ImageManagerStatistics { counters.value }
    /// Receives warnings the manager does not fail a load for (e.g. a cache store error). Default: stderr.
    public var logHandler: @Sendable (String) -> Void {
        get { settings.withLock { $0.log } }
        set { settings.withLock { $0.log = newValue } }
    }

    /// The failed-URL list's time to live in seconds (default 1 hour).
    public var failedURLTTL: TimeInterval {
        get { failedURLs.withLock { $0.ttl } }
        set { failedURLs.withLock { $0.ttl = newValue } }
    }
    /// The failed-URL list's capacity (default 1,000 URLs; the oldest entry goes first).
    public var failedURLCapacity: Int {
        get { failedURLs.withLock { $0.capacity } }
        set { failedURLs.withLock { $0.capacity = max(1, newValue) } }
    }

    /// True when `url` is on the failed-URL list (it blocks image loads).
    public func isFailedURL(_ url: URL) -> Bool {
        // Most managers never block a URL: skip the clock then.
        guard failedURLCount.load(ordering: .acquiring) > 0 else { return false }
        let now = failedURLClock.value()
        return failedURLs.withLock { $0.contains(url, now: now) }
    }

    /// True when `url` is on the failed-URL list for a verdict on its transfer, which blocks data loads too (one on
    /// its content blocks only image loads: ``FailedURLList/Verdict``).
    public func isFailedTransfer(_ url: URL) -> Bool {
        guard failedURLCount.load(ordering: .acquiring) > 0 else { return false }
        let now = failedURLClock.value()
        return failedURLs.withLock { $0.contains(url, verdict: .transfer, now: now) }
    }
    /// Takes `url` off the failed-URL list.
    public func removeFailedURL(_ url: URL) {
        // Every successful download asks: skip the lock when nothing is listed.
        guard failedURLCount.load(ordering: .acquiring) > 0 else { return }
        updateFailedURLs { $0.remove(url) }
    }
    /// Empties the failed-URL list.
    public func removeAllFailedURLs() { updateFailedURLs { $0.removeAll() } }

    /// True while any load, shared fetch or download is in progress (a download holds its place ahead of the
    /// decoder until its decode starts).
    public var isRunning: Bool {
        running.withLock { !$0.isEmpty } || jobs.withLock { !$0.jobs.isEmpty } || downloadAdmission.aheadCount > 0
            || downloadAdmission.waitingCount > 0
    }

    /// Cancels every running load of this manager; each completes with `cancelled`.
    public func cancelAll() {
        let operations = running.withLock { Array($0.values) }
        for operation in operations { operation.cancel() }
    }

    /// The cache key a load of `url` with `options` and `context` uses: the manager's filter, transformer and options
    /// processor applied as a load applies them, then the partition, thumbnail, orientation, first-frame, decode
    /// and transformer parts (see the key table in ARCHITECTURE.md and ``CacheKeyFormat``).
    ///
    /// Returns nil for a nil URL or when the filter makes the URL uncacheable.
    public func cacheKey(for url: URL?, options: ImageOptions = [], context: ImageContext? = nil) -> String? {
        guard let url else { return nil }
        var effectiveOptions = options
        var merged = mergedContext(context ?? ImageContext())
        let settings = loadSettings
        if settings.hasOptionsProcessor, let processor = settings.optionsProcessor {
            let processed = processor.processedResult(for: url, options: effectiveOptions, context: merged)
            effectiveOptions = processed.options
            merged = processed.context
        }
        let decode =
            LoadPlan.hasStandardDecodeOptions(options: effectiveOptions, context: merged)
            ? nil : DecodeOptionsBox(LoadPlan.decodeOptions(options: effectiveOptions, context: merged))
        return LoadPlan.keys(for: url, absoluteString: url.absoluteString, context: merged, decodeOptions: decode).key
    }

    func nextID() -> UInt64 {
        idSource.withLock {
            $0 &+= 1
            return $0
        }
    }

    func log(_ message: String) { settings.withLock { $0.log }(message) }
}

/// What a manager did beside loading, for logs and metrics (ImageCore has no metrics dependency: read these and
/// export them with your metrics system).
public struct ImageManagerStatistics: Sendable, Hashable {
    /// Cache entries that failed to decode and were removed (the load then fetched the image again).
    public var removedUndecodableCacheEntries = 0
    /// Responses not stored because they said `Cache-Control: no-store`, or `private` (see
    /// ``ImageManager/cachesPrivateResponses``).
    public var responsesNotStored = 0
    /// Disk entries of derived images not written because too many encodes were already waiting (the image is
    /// still stored in memory and delivered; see ``WorkPool/Priority/background``).
    public var diskEncodesDropped = 0
    /// Images decoded from cut-short bytes that were delivered and not stored (see
    /// ``ImageManager/storesIncompleteImages``).
    public var incompleteImagesNotStored = 0
}
