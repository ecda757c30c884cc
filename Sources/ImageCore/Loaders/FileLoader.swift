import Foundation

/// Loads `file://` URLs from the local file system, on the ``WorkPool/io`` pool.
///
/// A missing or unreadable file fails with `downloadFailed` at the download stage (not blocked: the file may
/// appear later); files larger than ``maxFileSize`` fail with `downloadTooLarge` before being read.
public struct FileLoader: ImageLoader {
    /// The largest file read (default 256 MiB).
    public var maxFileSize: Int

    /// Creates a loader.
    public init(maxFileSize: Int = 256 << 20) { self.maxFileSize = maxFileSize }

    /// True for `file:` URLs.
    public func canRequestImage(for url: URL) -> Bool { url.isFileURL }

    /// Reads the file off the calling thread.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        let operation = CancellableOperation()
        let maxFileSize = self.maxFileSize
        WorkPool.io.submit {
            if operation.isCancelled { return completion(.failure(.cancelled(stage: .download))) }
            completion(Self.read(url, maxFileSize: maxFileSize, progress: progress))
        }
        return operation
    }

    static func read(
        _ url: URL, maxFileSize: Int, progress: (@Sendable (LoadProgress) -> Void)?
    ) -> Result<LoadedImageData, ImageError> {
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            if size > maxFileSize {
                return .failure(ImageError(.downloadTooLarge, stage: .download, message: "\(size) bytes"))
            }
            let data = try Data(contentsOf: url, options: .mappedIfSafe)
            progress?(LoadProgress(receivedBytes: data.count, expectedBytes: data.count))
            let type = ImageFormat.detect(data)?.mimeType
            return .success(LoadedImageData(data: data, response: ResponseMetadata(url: url, contentType: type)))
        } catch {
            return .failure(
                ImageError(.downloadFailed, stage: .download, message: url.path, underlying: SendableErrorBox(error)))
        }
    }
}
