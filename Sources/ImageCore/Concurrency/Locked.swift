import Synchronization

/// A reference-type box around a `Mutex`, for state shared by escaping closures.
///
/// `Mutex` is non-copyable and cannot be captured by escaping closures or passed around; this class can.
/// Never call out to user code inside `withLock`.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    /// Creates a box holding `value`.
    public init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with exclusive access to the value.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { value in try body(&value) }
    }

    /// A copy of the current value.
    public var value: Value { mutex.withLock { $0 } }
}
