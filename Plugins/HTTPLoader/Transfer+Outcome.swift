import Foundation
import ImageCore
import NIOCore

/// How a finished transfer turns into each caller's result, events, metrics and log lines.
extension Transfer {
    /// One caller's result from the shared one (outside every lock, where its callbacks run): its own response
    /// (decided at the head, or now for a caller that joined later, then checked like any response), its header
    /// check if it never answered, its decryptor. A failure carries the response the caller got.
    static func personalize(
        _ result: Result<LoadedImageData, ImageError>, for caller: Caller, personalResponse: ResponseMetadata?,
        headerCheck: DownloadHeaderCheck?, acceptable validator: ResponseValidator
    ) -> Result<LoadedImageData, ImageError> {
        guard case .success(var loaded) = result else { return result }
        if let personalResponse {
            loaded.response = personalResponse
        } else if let modifier = caller.responseModifier {
            guard let response = modifier.modifiedResponse(for: loaded.response) else {
                return .failure(TransferStateMachine.refusedByModifier().attaching(response: loaded.response))
            }
            if let error = validator.error(for: response) { return .failure(error.attaching(response: response)) }
            loaded.response = response
        }
        if loaded.response.statusCode == 304 {
            return .failure(TransferStateMachine.notModified.attaching(response: loaded.response))
        }
        if let headerCheck, case .reject(let error) = headerCheck(loaded.data) {
            return .failure(error.attaching(response: loaded.response))
        }
        if let decryptor = caller.decryptor {
            guard let data = decryptor.decryptedData(with: loaded.data, response: loaded.response) else {
                return .failure(
                    ImageError(.badImageData, stage: .download, message: "the decryptor returned nil")
                        .attaching(response: loaded.response))
            }
            loaded.data = data
        }
        return .success(loaded)
    }

    /// Metrics, the event and the log line of the transfer's one ending.
    func report(_ ending: TransferStateMachine.Ending) {
        let metrics = loader.metrics
        let logger = loader.logger
        // Nanoseconds, made a `Duration` only for an event somebody reads (its 128-bit arithmetic is not free).
        var nanoseconds: Int64 = 0
        if let startedAt = ending.startedAt {
            nanoseconds = Int64(clamping: NIODeadline.now().uptimeNanoseconds &- startedAt)
            metrics.duration.recordNanoseconds(nanoseconds)
            if ending.wireBytes > 0 { metrics.bytes.increment(by: Int64(ending.wireBytes)) }
        }
        var duration: Duration { .nanoseconds(nanoseconds) }
        switch ending.result {
        case .success(let response):
            let status = response.statusCode ?? 200
            let bytes = ending.bodyBytes
            loader.events.yield(
                HTTPLoaderEvent(
                    transferID: id, url: url, kind: .finished(statusCode: status, bytes: bytes, duration: duration)))
            if logger.logLevel <= .debug {
                logger.debug("HTTP transfer finished", metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)"])
            }
        case .failure(let error) where error.code == .cacheNotModified:
            loader.events.yield(
                HTTPLoaderEvent(
                    transferID: id, url: url, kind: .finished(statusCode: 304, bytes: 0, duration: duration)))
            logger.debug("HTTP transfer not modified", metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)"])
        case .failure(let error) where error.isCancellation:
            metrics.cancelled.increment()
            loader.events.yield(HTTPLoaderEvent(transferID: id, url: url, kind: .cancelled))
            logger.debug("HTTP transfer cancelled", metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)"])
        case .failure(let error):
            metrics.recordFailure(error)
            loader.events.yield(HTTPLoaderEvent(transferID: id, url: url, kind: .failed(error, duration: duration)))
            logger.debug(
                "HTTP transfer failed",
                metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "error": "\(error)"])
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
