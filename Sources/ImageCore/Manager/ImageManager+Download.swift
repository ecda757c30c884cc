import Foundation

extension ImageManager {
    /// Downloads for `operation` (joining an identical download in flight), unless the options, the delegate or
    /// the loader forbid it. `cached` is the entry a ``ImageOptions/refreshCached`` load revalidates; `deliverData`
    /// makes it a data load's, served with the bytes themselves (``loadData(with:options:context:completed:)``).
    ///
    /// `keptRecheck` is a kept data load's look at memory before it starts a job (``MemoryRecheck``): the bytes an
    /// identical load stored as its job ended.
    func download(
        _ operation: ImageLoadOperation, _ plan: LoadPlan, cached: CacheQueryResult?,
        keptRecheck: MemoryRecheck? = nil, deliverData: DataDelivery? = nil
    ) {
        let url = plan.url
        if let refusal = downloadRefusal(plan) {
            // A revalidating load that may not download keeps its cached image as the final result (not renewed: no
            // loader said it is current).
            return operation.finish(
                .failure(cached == nil ? refusal : ImageError(.cacheNotModified, stage: .download)), renews: false)
        }
        var context = plan.context
        // Everything that changes the transfer is a field of the job's key (escaped: a partition or a validator can't
        // spell another field), so loads share a download only when all of it is equal. Which options those are is
        // their declaration's (``OptionTraits/DownloadRule``), read from ``LoadTraits``.
        let traits = plan.traits
        var fields: [(tag: String, value: String)] = [("load", url.absoluteString)]
        for name in traits.downloadFields {
            switch name {
            case "cookies", "insecure": fields.append((name, ""))
            case "partition": fields.append((name, plan.partitionKey ?? ""))
            case "etag,lastModified": break  // The validators the loader gets, below.
            default:
                if let key = traits.pluginDownloadKeys.first(where: { $0.rawValue == name }) {
                    fields.append(("plugin:" + name, plan.context[key].map { String(describing: $0) } ?? ""))
                } else {
                    // A declared field nothing here knows how to compare: never share rather than guess.
                    fields.append(("unmatched:" + name, String(nextID())))
                }
            }
        }
        let transferKey = plan.loader.transferKey(for: url, options: plan.options, context: plan.context)
        if !transferKey.isEmpty { fields.append(("transfer", transferKey)) }
        if let cached {
            context.loaderCachedImage = cached.image
            context.loaderCachedMetadata = cached.metadata
        }
        // The validators the loader sends: the revalidated entry's, or ones the caller set in the context. A load
        // that brings its own may get a 304, which a load without them must never share.
        if cached != nil || context.loaderCachedMetadata != nil {
            fields.append(("etag", context.loaderCachedMetadata?.etag ?? ""))
            fields.append(("lastModified", context.loaderCachedMetadata?.lastModified ?? ""))
        }
        if !plan.isShareable || traits.isolatesDownload { fields.append(("isolated", String(nextID()))) }
        let loaderContext = context
        // A data load wants bytes, which a memory hit of the image is not.
        let recheck = cached == nil && deliverData == nil ? memoryRecheck(plan, operation) : keptRecheck
        let control = plan.loader.downloadControl(for: url)
        subscribe(
            operation, plan, jobKey: CacheKeys.composite(fields), inline: false, decodeOptions: plan.decodeOptions,
            deliverData: deliverData, cacheOrigin: nil, fallback: nil, recheck: recheck
        ) { job in
            var requestContext = loaderContext
            // Bytes a decryptor will turn into the image can't be judged on the wire.
            if requestContext.downloadDecryptor == nil {
                requestContext.downloadHeaderCheck = Self.headerCheck(for: job, coder: plan.decoder)
            }
            let loaderContext = requestContext
            // The loader's cancels reach this job (and its place in the admission queue) by the caller's URL.
            if let control { job.register(in: control, url: url) }
            let download = self.downloadAdmission.admit(
                priority: ImageLoadPriority(options: plan.options), control: control, url: url,
                {
                    plan.loader.requestImage(
                        with: url, options: plan.options, context: loaderContext,
                        progress: { job.progress($0) },
                        completion: { result in
                            switch result {
                            case .success(let loaded):
                                self.removeFailedURL(url)
                                let content: FetchSource.Content =
                                    loaded.image.map { .originalImage($0, bytes: loaded.data) }
                                    ?? .originalBytes(loaded.data)
                                job.sourceSucceeded(
                                    FetchSource(content: content, origin: .download, response: loaded.response))
                            case .failure(let error):
                                self.recordFailure(
                                    error, plan: plan, isUniversal: job.isUniversalVerdict(error, startedBy: plan))
                                job.sourceFailed(error)
                            }
                        })
                },
                cancelledWhileWaiting: { job.sourceFailed(.cancelled(stage: .download)) })
            job.adopt(download)
            return download
        }
    }

    /// Why `plan` may not download, or nil: `.fromCacheOnly`, the delegate's veto, no loader for the URL.
    func downloadRefusal(_ plan: LoadPlan) -> ImageError? {
        let url = plan.url
        if plan.options.contains(.fromCacheOnly) {
            return ImageError(.cacheMiss, stage: .cacheQuery, message: "not cached and .fromCacheOnly is set")
        }
        if delegate?.imageManager(self, shouldDownloadImageFor: url) == false {
            return ImageError(.cacheMiss, stage: .download, message: "the delegate refused the download")
        }
        if !plan.loader.canRequestImage(for: url) {
            return ImageError(.noLoader, stage: .download, message: "no loader for \(url.scheme ?? "this URL")")
        }
        return nil
    }

    /// Bytes after which a header that no coder could read is given up on (the decode judges it).
    static let headerCheckLimit = 1 << 20

    /// The check a loader runs on the first bytes: probe the header with the load's coder, and refuse the image
    /// when it is over the pixel budget of every load still waiting on this download.
    static func headerCheck(for job: FetchJob, coder: any ImageCoder) -> DownloadHeaderCheck {
        DownloadHeaderCheck { [weak job] prefix in
            guard let job else { return .accept }
            guard let properties = coder.probe(prefix) else {
                if prefix.count >= headerCheckLimit || (prefix.count >= 64 && !coder.canDecode(prefix)) {
                    return .accept
                }
                return .needMoreData
            }
            return job.headerRefusal(width: properties.width, height: properties.height).map { .reject($0) } ?? .accept
        }
    }

    /// Puts the URL on the failed-URL list when the delegate (or else the loader) says the error is permanent.
    ///
    /// The list keeps only verdicts every load of the URL would reach (``LoadTraits/isUniversalVerdict(_:)``): a
    /// status verdict (404, 410) of a load whose options change the bytes fetched (a request modifier, cookies, a
    /// loader of its own…), or a verdict on the bytes (too large, undecodable, no coder) of a load whose options
    /// change the bytes, the pixels or a budget (a thumbnail scaled up past the budget, a colour conversion, a coder
    /// option, a stricter limit), is that load's own and blocks nobody. Nor does a cancel or a transient error (the
    /// loader's policy).
    ///
    /// - Parameter isUniversal: whether the error is such a verdict, when the caller knows better than `plan`'s
    ///   traits (a download's header check judges by the budgets of the loads waiting on it, not the starter's).
    func recordFailure(_ error: ImageError, plan: LoadPlan, isUniversal: Bool? = nil) {
        guard !error.isCancellation, error.code != .cacheNotModified else { return }
        guard isUniversal ?? plan.traits.isUniversalVerdict(error) else { return }
        let block =
            delegate?.imageManager(self, shouldBlockFailedURL: plan.url, error: error)
            ?? plan.loader.shouldBlockFailedURL(plan.url, error: error)
        if block {
            let now = failedURLClock.value()
            let verdict = Self.failedURLVerdict(of: error)
            updateFailedURLs { $0.insert(plan.url, verdict: verdict, now: now) }
        }
    }

    /// What a permanent failure judged: the bytes (undecodable, no coder, over a pixel budget — a data load would
    /// still get them) or the transfer (every other: a status, a body over the limit).
    static func failedURLVerdict(of error: ImageError) -> FailedURLList.Verdict {
        switch error.code {
        case .badImageData, .noCoder, .imageTooLarge: .content
        default: .transfer
        }
    }
}
