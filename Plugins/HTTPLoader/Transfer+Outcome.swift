import Foundation
import ImageCore

/// How a finished transfer turns into each caller's result, events, metrics and log lines.
extension Transfer {
    /// One caller's result from the shared one (outside every lock, on the callback queue): its own response
    /// (decided at the head, or now for a caller that joined later, then checked like any response), its
    /// header check if it never answered, its decryptor.
    static func personalize(
        _ result: Result<LoadedImageData, ImageError>, for caller: Caller, personalResponse: ResponseMetadata?,
        headerCheck: DownloadHeaderCheck?, acceptable validator: ResponseValidator
    ) -> Result<LoadedImageData, ImageError> {
        guard case .success(var loaded) = result else { return result }
        if let personalResponse {
            loaded.response = personalResponse
        } else if let modifier = caller.responseModifier {
            guard let response = modifier.modifiedResponse(for: loaded.response) else {
                return .failure(refusedByModifier())
            }
            if let error = validator.error(for: response) { return .failure(error) }
            loaded.response = response
        }
        if loaded.response.statusCode == 304 {
            return .failure(
                ImageError(.cacheNotModified, stage: .download, message: "304 Not Modified", statusCode: 304))
        }
        if let headerCheck, case .reject(let error) = headerCheck(loaded.data) { return .failure(error) }
        if let decryptor = caller.decryptor {
            guard let data = decryptor.decryptedData(with: loaded.data, response: loaded.response) else {
                return .failure(ImageError(.badImageData, stage: .download, message: "the decryptor returned nil"))
            }
            loaded.data = data
        }
        return .success(loaded)
    }

    func report(_ result: Result<LoadedImageData, ImageError>, duration: Duration, bytes: Int, abandoned: Bool) {
        let metrics = loader.metrics
        let logger = loader.logger
        metrics.duration.recordNanoseconds(duration.nanoseconds)
        if bytes > 0 { metrics.bytes.increment(by: Int64(bytes)) }
        switch result {
        case .success(let loaded):
            let status = loaded.response.statusCode ?? 200
            loader.events.yield(
                HTTPLoaderEvent(
                    transferID: id, url: url,
                    kind: .finished(statusCode: status, bytes: loaded.data.count, duration: duration)))
            logger.debug(
                "HTTP transfer finished",
                metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)", "bytes": "\(loaded.data.count)"])
        case .failure(let error) where error.code == .cacheNotModified:
            loader.events.yield(
                HTTPLoaderEvent(
                    transferID: id, url: url, kind: .finished(statusCode: 304, bytes: 0, duration: duration)))
            logger.debug("HTTP transfer not modified", metadata: ["transfer": "\(id)", "url": "\(url.absoluteString)"])
        case .failure(let error):
            // An abandoned transfer was already reported as cancelled when its last caller left.
            guard !abandoned || !error.isCancellation else { return }
            if error.isCancellation {
                metrics.cancelled.increment()
                loader.events.yield(HTTPLoaderEvent(transferID: id, url: url, kind: .cancelled))
            } else {
                metrics.recordFailure(error)
                loader.events.yield(HTTPLoaderEvent(transferID: id, url: url, kind: .failed(error, duration: duration)))
            }
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
