import Foundation

/// What makes two loads' strategies (a serializer, say) "the same" for coalescing: the manager's own, an instance
/// (classes compare by identity), an equal value (`Hashable` values), or nothing else (a unique identity, so a
/// closure-backed value never shares work it may not share).
struct StrategyIdentity: Hashable, Sendable {
    private enum Kind: Hashable, Sendable {
        case none
        case managerDefault
        case instance(ObjectIdentifier)
        case value(Box)
        case unique(UInt64)
    }

    /// A `Hashable` value compared as such. `@unchecked Sendable`: it is only made from a value that arrived as
    /// `any Sendable` (the cast to `Hashable` loses that marker), and it is immutable.
    private struct Box: Hashable, @unchecked Sendable {
        let value: AnyHashable
    }

    private let kind: Kind

    /// No strategy: the SDK's default behaviour.
    static let none = StrategyIdentity(kind: .none)
    /// The manager's own strategy (every load of the manager shares it).
    static let managerDefault = StrategyIdentity(kind: .managerDefault)

    private init(kind: Kind) { self.kind = kind }

    /// The identity of `value`: its instance for a class, the value itself when `Hashable`, else `unique`.
    init(_ value: any Sendable, unique: @autoclosure () -> UInt64) {
        if type(of: value) is AnyClass {
            kind = .instance(ObjectIdentifier(value as AnyObject))
        } else if let hashable = value as? any Hashable {
            kind = .value(Box(value: AnyHashable(hashable)))
        } else {
            kind = .unique(unique())
        }
    }
}
