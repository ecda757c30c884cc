import Foundation

/// One event of a load observed as an `AsyncSequence` (see ``ImageManager/imageEvents(for:options:context:)``).
public enum ImageLoadEvent: Sendable {
    /// Bytes received so far and expected in all.
    case progress(receivedBytes: Int, expectedBytes: Int?)
    /// A non-final image: a progressive preview, or the cached image of a revalidating load.
    case preview(ImageResult)
    /// The final image; the sequence ends after it.
    case completed(ImageResult)
}

/// How an async load goes on after the checks and the memory fast path.
private enum AsyncLoadStep {
    /// It ended there: a memory hit, or a URL that failed the checks.
    case finished(Result<ImageResult, ImageError>)
    /// It needs the cache levels or the download.
    case load(URL, LoadLookup, ImageContext, ImageManager.MemoryAnswer)
}

extension ImageManager {
    /// Loads the image at `url` and returns the final result.
    ///
    /// A memory hit returns without suspending (the cache answers on the calling thread). Otherwise cancelling the
    /// calling task cancels the load, which then throws `cancelled`. Non-final deliveries are skipped; use
    /// ``imageEvents(for:options:context:)`` to observe them.
    /// - Throws: ``ImageError``.
    public func loadImage(
        with url: URL?, options: ImageOptions = [], context: ImageContext? = nil
    ) async throws(ImageError) -> ImageResult {
        guard let url else { throw .invalidURL("nil URL") }
        let step: AsyncLoadStep = prepareLoad(
            url, options: options, context: context ?? ImageContext(), failed: { .finished(.failure($0)) }
        ) { url, context, lookup in
            // A memory hit is the answer already: no continuation, no suspension, no cancellation handler.
            var hit: ImageResult?
            guard let memory = queryMemory(url, &lookup, context: context, hit: { hit = $0 }), hit == nil else {
                return .finished(hit.map { .success($0) } ?? .failure(.cancelled()))
            }
            return .load(url, lookup, context, memory)
        }
        guard case .load(let url, let lookup, let context, let memory) = step else {
            if case .finished(let result) = step { return try result.get() }
            throw .cancelled()
        }
        let handle = Locked<ImageLoadOperation?>(nil)
        let result: Result<ImageResult, ImageError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let operation = start(url, lookup, context: context, after: memory, progress: nil) { result in
                    if case .success(let value) = result, !value.isFinal { return }
                    continuation.resume(returning: result)
                }
                handle.withLock { $0 = operation }
                if Task.isCancelled { operation.cancel() }
            }
        } onCancel: {
            handle.withLock { $0 }?.cancel()
        }
        return try result.get()
    }

    /// Loads the image at `url` and streams its progress, previews and final image.
    ///
    /// The stream finishes after ``ImageLoadEvent/completed(_:)`` or throws the load's ``ImageError``.
    /// Terminating the stream (e.g. breaking out of the `for await` loop) cancels the load.
    public func imageEvents(
        for url: URL?, options: ImageOptions = [], context: ImageContext? = nil
    ) -> AsyncThrowingStream<ImageLoadEvent, any Error> {
        AsyncThrowingStream { continuation in
            let operation = loadImage(
                with: url, options: options, context: context,
                progress: { received, expected, _ in
                    continuation.yield(.progress(receivedBytes: received, expectedBytes: expected))
                },
                completed: { result in
                    switch result {
                    case .success(let value) where !value.isFinal:
                        continuation.yield(.preview(value))
                    case .success(let value):
                        continuation.yield(.completed(value))
                        continuation.finish()
                    case .failure(let error):
                        continuation.finish(throwing: error)
                    }
                })
            continuation.onTermination = { _ in operation.cancel() }
        }
    }
}
