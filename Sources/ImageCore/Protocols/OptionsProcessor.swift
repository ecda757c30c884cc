import Foundation

/// Options and context after an ``OptionsProcessor`` ran.
public struct OptionsResult: Sendable {
    /// The options the load runs with.
    public var options: ImageOptions
    /// The context the load runs with.
    public var context: ImageContext
    /// Creates a result.
    public init(options: ImageOptions, context: ImageContext) {
        self.options = options
        self.context = context
    }
}

/// Rewrites the options and context of every load of a manager (e.g. force `.retryFailed` for one host).
///
/// Threading: called synchronously on the thread that starts the load, after the manager merged its defaults;
/// must be fast and thread-safe.
public protocol OptionsProcessor: Sendable {
    /// The options and context to use for `url`.
    func processedResult(for url: URL?, options: ImageOptions, context: ImageContext) -> OptionsResult
}

/// An options processor backed by a closure.
public struct BlockOptionsProcessor: OptionsProcessor {
    private let body: @Sendable (URL?, ImageOptions, ImageContext) -> OptionsResult
    /// Creates the processor.
    public init(_ body: @escaping @Sendable (URL?, ImageOptions, ImageContext) -> OptionsResult) { self.body = body }
    /// Calls the closure.
    public func processedResult(for url: URL?, options: ImageOptions, context: ImageContext) -> OptionsResult {
        body(url, options, context)
    }
}

extension OptionsProcessor where Self == BlockOptionsProcessor {
    /// A processor backed by a closure.
    public static func block(
        _ body: @escaping @Sendable (URL?, ImageOptions, ImageContext) -> OptionsResult
    ) -> BlockOptionsProcessor {
        BlockOptionsProcessor(body)
    }
}
