import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Loads `file://` URLs below one root directory, on the ``WorkPool/io`` pool.
///
/// Local files are opt-in: no manager loads them unless this loader is added (``LoadersManager/addLoader(_:)``).
/// A server that takes URLs from its users must not read its own file system for them, so the loader only
/// serves files whose real path (symlinks resolved) is inside ``rootDirectory``; anything else — outside the
/// root, missing, unreadable, not a regular file — fails alike with `downloadFailed` ("not available"), so the
/// error tells nothing about what exists. Files are read with bounded `read(2)` calls, never mapped (a file that
/// changes while mapped can crash the reader); files larger than ``maxFileSize`` fail with `downloadTooLarge`.
public struct FileLoader: ImageLoader {
    /// The directory the loader serves (its real path, symlinks resolved at init).
    public let rootDirectory: URL
    /// The largest file read (default 64 MiB).
    public var maxFileSize: Int

    /// Creates a loader serving the files below `rootDirectory`.
    public init(rootDirectory: URL, maxFileSize: Int = 64 << 20) {
        let path = rootDirectory.standardizedFileURL.path
        let resolved = Self.realPath(path) ?? path
        self.rootDirectory = URL(fileURLWithPath: resolved, isDirectory: true)
        self.maxFileSize = maxFileSize
    }

    /// True for `file:` URLs.
    public func canRequestImage(for url: URL) -> Bool { url.isFileURL }

    /// Reads the file off the calling thread.
    public func requestImage(
        with url: URL, options: ImageOptions, context: ImageContext, progress: (@Sendable (LoadProgress) -> Void)?,
        completion: @escaping @Sendable (Result<LoadedImageData, ImageError>) -> Void
    ) -> any ImageOperation {
        let operation = CancellableOperation()
        let root = rootDirectory.path
        let maxFileSize = self.maxFileSize
        WorkPool.io.submit {
            if operation.isCancelled { return completion(.failure(.cancelled(stage: .download))) }
            completion(Self.read(url, root: root, maxFileSize: maxFileSize, progress: progress))
        }
        return operation
    }

    static func read(
        _ url: URL, root: String, maxFileSize: Int, progress: (@Sendable (LoadProgress) -> Void)?
    ) -> Result<LoadedImageData, ImageError> {
        let unavailable = ImageError(.downloadFailed, stage: .download, message: "file not available: \(url.path)")
        guard let path = realPath(url.path), isInside(path, root: root) else { return .failure(unavailable) }
        // Non-blocking: opening a FIFO for reading waits for a writer, forever, before fstat could refuse it (a
        // load stuck, a pool thread held). A regular file reads the same either way.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return .failure(unavailable) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return .failure(unavailable) }
        let size = Int(info.st_size)
        if size > maxFileSize {
            return .failure(ImageError(.downloadTooLarge, stage: .download, message: "\(size) bytes"))
        }
        // Read at most maxFileSize + 1 bytes: a file that grew since fstat is still refused, never read whole.
        var data = Data(count: min(size, maxFileSize) + 1)
        var filled = 0
        let readError: Int32? = data.withUnsafeMutableBytes { buffer in
            while filled < buffer.count {
                let count = Foundation.read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if count == 0 { break }
                filled += count
            }
            return nil
        }
        if let readError {
            return .failure(
                ImageError(
                    .downloadFailed, stage: .download, message: url.path,
                    underlying: SendableErrorBox(POSIXError(POSIXErrorCode(rawValue: readError) ?? .EIO))))
        }
        if filled > maxFileSize {
            return .failure(ImageError(.downloadTooLarge, stage: .download, message: "over \(maxFileSize) bytes"))
        }
        data.count = filled
        progress?(LoadProgress(receivedBytes: data.count, expectedBytes: data.count))
        let type = ImageFormat.detect(data)?.mimeType
        return .success(LoadedImageData(data: data, response: ResponseMetadata(url: url, contentType: type)))
    }

    /// The canonical path with every symlink resolved; nil when the file doesn't exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// True when `path` is `root` itself or below it (component-wise, so `/data2` is not inside `/data`).
    static func isInside(_ path: String, root: String) -> Bool {
        if root == "/" { return true }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return path.hasPrefix(prefix)
    }
}
