import Foundation
import ImageCore
import ImageTestSupport

/// A manager over fresh doubles, decoding with the test coder as the manager's own coders (so its verdicts on bytes
/// count as any load's: see the failed-URL policy).
struct Rig {
    let manager: ImageManager
    let cache: RecordingCache
    let loader: ScriptedLoader
    let coder: TestCoder

    init(
        loaderDelay: TimeInterval = 0, decodeDelay: TimeInterval = 0, workPool: WorkPool = .cpu,
        cacheAnswersSynchronously: Bool = true
    ) {
        cache = RecordingCache(answersSynchronously: cacheAnswersSynchronously)
        loader = ScriptedLoader(delay: loaderDelay)
        coder = TestCoder(decodeDelay: decodeDelay)
        manager = ImageManager(
            cache: cache, loader: loader, coders: CodersManager(coders: [coder]), workPool: workPool)
        manager.logHandler = { _ in }
    }

    /// A context with `extra`.
    func context(_ extra: [ImageContextOption: any Sendable] = [:]) -> ImageContext {
        ImageContext(extra)
    }

    /// Scripts `url` to answer a `width` x `height` test image.
    @discardableResult
    func serve(_ url: URL, width: Int = 8, height: Int = 8, etag: String? = nil) -> Data {
        let data = TestCoder.data(width: width, height: height)
        loader.set(
            .data(data, ResponseMetadata(url: url, statusCode: 200, contentType: "image/x-test", etag: etag)), for: url)
        return data
    }

    /// Loads and waits for the final result.
    func load(
        _ url: URL?, options: ImageOptions = [], context extra: [ImageContextOption: any Sendable] = [:]
    ) async -> Result<ImageResult, ImageError> {
        let recorder = DeliveryRecorder()
        manager.loadImage(with: url, options: options, context: context(extra), completed: recorder.handler)
        return await recorder.waitForFinal() ?? .failure(ImageError(.cancelled, stage: .request, message: "timeout"))
    }
}

func testURL(_ name: String = #function) -> URL {
    let cleaned = name.filter { $0.isLetter || $0.isNumber }
    return URL(string: "test://host/\(cleaned)-\(UUID().uuidString).png")!
}

extension Result where Failure == ImageError {
    var value: Success? { try? get() }
    var error: ImageError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
