/// A first-in first-out queue with amortised O(1) append and pop that lets go of each element as it is popped.
///
/// The job queues of the work pools hold closures that capture images and bytes. A queue that only moves a head
/// index keeps every popped closure, and all it captured, alive until the queue drains, which a busy pool may never
/// do: the soak saw hundreds of megabytes held that way. Here a popped slot is emptied at once and the storage is
/// compacted once half of it is spent.
///
/// Not thread-safe: the owner keeps it under its lock.
package struct FIFOQueue<Element> {
    private var slots: [Element?] = []
    private var head = 0

    /// Creates an empty queue.
    package init() {}

    /// Number of elements waiting.
    package var count: Int { slots.count - head }

    /// True when nothing waits.
    package var isEmpty: Bool { head == slots.count }

    /// Appends `element` at the tail.
    package mutating func append(_ element: Element) { slots.append(element) }

    /// Removes and returns the element at the head, or nil when the queue is empty.
    package mutating func popFirst() -> Element? {
        guard head < slots.count else { return nil }
        let element = slots[head].take()
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
        return element
    }
}
