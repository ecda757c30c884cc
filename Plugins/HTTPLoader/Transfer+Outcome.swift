import Foundation
import ImageCore

/// How a finished transfer turns into each caller's result, events, metrics and log lines.
extension Transfer {
    /// Applies one caller's response modifier and decryptor to the shared result (outside every lock).
    static func personalize(
        _ result: Result<LoadedImageData, ImageError>, for caller: Caller
    ) -> Result<LoadedImageData, ImageError> {
        guard case .success(var loaded) = result else { return result }
        if let modifier = caller.responseModifier {
            guard let response = modifier.modifiedResponse(for: loaded.response) else {
                return .failure(
                    ImageError(.invalidDownloadResponse, stage: .download, message: "the response modifier refused it"))
            }
            loaded.response = response
        }
        if let decryptor = caller.decryptor {
            guard let data = decryptor.decryptedData(with: loaded.data, response: loaded.response) else {
                return .failure(ImageError(.badImageData, stage: .download, message: "the decryptor returned nil"))
            }
            loaded.data = data
        }
        return .success(loaded)
    }

    func report(_ result: Result<LoadedImageData, ImageError>, duration: Duration, abandoned: Bool) {
        let metrics = loader.metrics
        let logger = loader.logger
        metrics.duration.recordNanoseconds(duration.nanoseconds)
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
