import Foundation

/// Who waits on a fetch: the load's handle and plan, and where the load goes if a cache entry turns out unusable.
struct FetchSubscriber: Sendable {
    let operation: ImageLoadOperation
    let plan: LoadPlan
    /// Continues the load past an unusable cache entry (undecodable, or a variant the load can't use); nil fails
    /// the subscriber with the error instead.
    let fallback: (@Sendable (ImageLoadOperation) -> Void)?
    /// Where a data load's bytes go (``ImageManager/loadData(with:options:context:completed:)``); nil for image
    /// loads.
    var deliverData: DataDelivery? = nil
}

/// How a data load is handed its bytes.
struct DataDelivery: Sendable {
    /// Runs on the job's thread as the bytes are served, before the job is forgotten, with the job whose transfer
    /// they are: a kept load stores them here (once for the loads sharing the transfer), so a load that looks at
    /// memory once the job is gone finds them, whatever callback queue the load asked for.
    var keep: (@Sendable (ImageDataResult, _ transfer: FetchJob) -> Void)? = nil
    /// Runs on the load's callback queue.
    let deliver: @Sendable (ImageDataResult) -> Void
}

/// A decode's result: the image and the source's frame count when the coder's probe told it.
struct DecodedImage: Sendable {
    var image: Image
    var sourceFrameCount: Int?
}
