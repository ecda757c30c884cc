import Foundation
import ImageCore

/// Cancelling downloads (SDWebImageDownloader's `cancelAllDownloads`) and ending the loader.
extension HTTPLoader {
    /// Cancels every queued and running transfer, and every manager download waiting to reach this loader; the loader
    /// keeps running and accepts new requests.
    ///
    /// One registry (``/ImageCore/ImageLoader/downloadControl(for:)``) ends them together: the downloads an
    /// ``/ImageCore/ImageManager`` holds in its admission queue for this loader (they never start), the manager jobs of
    /// those downloads (their loads complete with `cancelled`, and no load joins them any more), then the transfers
    /// themselves. Every caller of a cancelled transfer completes with `cancelled` (stage `download`), on a Dispatch
    /// queue (or the configured ``HTTPLoaderConfiguration/callbackQueue``), never inside this call; running requests
    /// are cancelled and their connections closed, queued ones are never sent. A load or request made after this call
    /// returns starts a new transfer. Thread-safe.
    ///
    /// - Returns: The number of transfers cancelled, plus the manager downloads that were waiting to start.
    @discardableResult
    public func cancelAllDownloads() -> Int {
        control.cancelAll() + cancel { _ in true }
    }

    /// Cancels the downloads of `url` — compared by its absolute string as the caller gave it, before any request
    /// modifier rewrote it or a redirect moved it — the same way ``cancelAllDownloads()`` cancels all: every
    /// transfer a caller asked `url` of, whatever its headers or deadline, and the managers' downloads of `url`
    /// still waiting to reach this loader. Other transfers go on.
    ///
    /// - Returns: The number of transfers cancelled, plus the manager downloads that were waiting to start.
    @discardableResult
    public func cancelDownloads(for url: URL) -> Int {
        let target = url.absoluteString
        return control.cancel(url: url) + cancel { $0.serves(requestedURL: target) }
    }

    /// The registry managers register their downloads of this loader in (see ``cancelAllDownloads()``).
    public func downloadControl(for url: URL) -> DownloadControl? { control }

    /// Aborts the transfers `matching` selects, running and queued.
    private func cancel(where matching: (Transfer) -> Bool) -> Int {
        // Matched outside the loader's lock: a match may take the transfer's own lock.
        let all = state.withLock { state -> [Transfer] in Array(state.queued.values) + Array(state.running.values) }
        let selected = all.filter(matching)
        for transfer in selected { transfer.abort(.cancelled(stage: .download)) }
        return selected.count
    }

    /// Cancels every transfer (callers complete with `cancelled`), ends the event streams and shuts down the
    /// clients the loader owns. Later requests fail with `cancelled`.
    ///
    /// - Throws: The client's shutdown error, if any.
    public func shutdown() async throws {
        let transfers = state.withLock { state -> [Transfer] in
            state.isShutdown = true
            return Array(state.queued.values) + Array(state.running.values)
        }
        for transfer in transfers { transfer.abort(.cancelled(stage: .download)) }
        events.finishAll()
        try await shutdownClients()
    }
}
