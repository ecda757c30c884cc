import Foundation
import ImageCore

/// Cancelling downloads (SDWebImageDownloader's `cancelAllDownloads`) and ending the loader.
extension HTTPLoader {
    /// Cancels every queued and running transfer; the loader keeps running and accepts new requests.
    ///
    /// Every caller of a cancelled transfer completes with `cancelled` (stage `download`), on a Dispatch queue (or
    /// the configured ``HTTPLoaderConfiguration/callbackQueue``), never inside this call; running requests are
    /// cancelled and their connections closed, queued ones are never sent. A request made after this call
    /// starts a new transfer. Thread-safe.
    ///
    /// - Returns: The number of transfers cancelled.
    @discardableResult
    public func cancelAllDownloads() -> Int {
        cancel { _ in true }
    }

    /// Cancels the transfers of `url` (compared by its absolute string, as requested before redirects): every
    /// transfer of that URL, whatever its headers or deadline. Other transfers go on; see
    /// ``cancelAllDownloads()`` for what cancelling does.
    ///
    /// - Returns: The number of transfers cancelled.
    @discardableResult
    public func cancelDownloads(for url: URL) -> Int {
        let target = url.absoluteString
        return cancel { $0.request.key.url == target }
    }

    /// Aborts the transfers `matching` selects, running and queued.
    private func cancel(where matching: (Transfer) -> Bool) -> Int {
        let selected = state.withLock { state -> [Transfer] in
            state.queued.values.filter(matching) + state.running.values.filter(matching)
        }
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
