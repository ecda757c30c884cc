import Dispatch
import Foundation

/// Splits row-shaped work into stripes and runs them with `DispatchQueue.concurrentPerform`.
///
/// Small jobs run inline on the caller's thread: waking threads costs more than it saves below a few hundred
/// thousand pixel operations. Transformers are called on the SDK's CPU pool (Dispatch threads), never on the
/// cooperative pool, so blocking in `concurrentPerform` is fine there.
enum Parallel {
    /// Active processors, read once.
    static let processorCount = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Below this much work (items × cost) one stripe is used.
    static let minimumWorkPerStripe = 1 << 17

    /// Runs `body` over contiguous sub-ranges of `0..<count` covering it exactly once.
    ///
    /// - Parameters:
    ///   - count: number of items (rows, column groups, …).
    ///   - costPerItem: rough cost of one item (e.g. pixels per row), used to decide how many stripes pay off.
    ///   - body: called once per stripe, possibly concurrently; must only write memory its stripe owns.
    static func forEachStripe(count: Int, costPerItem: Int, _ body: (Range<Int>) -> Void) {
        guard count > 0 else { return }
        let work = count.multipliedReportingOverflow(by: max(1, costPerItem))
        let byWork = work.overflow ? Int.max : max(1, work.partialValue / minimumWorkPerStripe)
        let stripes = min(count, processorCount, byWork)
        if stripes <= 1 {
            body(0..<count)
            return
        }
        withoutActuallyEscaping(body) { escapable in
            // Not Sendable because callers capture raw pointers. Sharing it is sound: stripes touch disjoint
            // output ranges and read-only inputs, and concurrentPerform returns only after every stripe ended.
            nonisolated(unsafe) let stripeBody = escapable
            DispatchQueue.concurrentPerform(iterations: stripes) { index in
                let lower = count * index / stripes
                let upper = count * (index + 1) / stripes
                if lower < upper { stripeBody(lower..<upper) }
            }
        }
    }
}
