/// The callers of one transfer by subscriber: the first one inline, any later one in a dictionary.
///
/// Nearly every transfer has exactly one caller; keeping it inline spares each transfer a dictionary (an
/// allocation and three hashed operations: the insert at join, the lookup and the removal at the end).
struct TransferCallers: Sendable {
    private var first: (id: UInt64, caller: Transfer.Caller)?
    private var others: [UInt64: Transfer.Caller] = [:]

    /// The caller of subscriber `id`, if it is still here; setting inserts or replaces it (nil removes it).
    subscript(id: UInt64) -> Transfer.Caller? {
        get {
            if let first, first.id == id { return first.caller }
            return others.isEmpty ? nil : others[id]
        }
        set {
            guard let newValue else {
                _ = removeValue(forKey: id)
                return
            }
            if first == nil || first?.id == id {
                first = (id, newValue)
            } else {
                others[id] = newValue
            }
        }
    }

    /// Removes and returns the caller of subscriber `id`, if it was here.
    mutating func removeValue(forKey id: UInt64) -> Transfer.Caller? {
        if let first, first.id == id {
            self.first = nil
            return first.caller
        }
        return others.isEmpty ? nil : others.removeValue(forKey: id)
    }

    /// The number of callers.
    var count: Int { (first == nil ? 0 : 1) + others.count }

    /// True when a caller satisfies `predicate`.
    func contains(where predicate: (Transfer.Caller) -> Bool) -> Bool {
        if let first, predicate(first.caller) { return true }
        return others.values.contains(where: predicate)
    }
}
