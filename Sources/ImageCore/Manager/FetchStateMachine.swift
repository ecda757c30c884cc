/// The pure state of one coalesced fetch: one source (a download or cached bytes) shared by every subscriber,
/// one decode per distinct decode key, one product (transform + store) per distinct product key.
///
/// No I/O, no locks, no callbacks: events go in, actions come out, and the ``FetchJob`` shell performs them
/// outside its lock. Generic over the payloads so tests drive it with plain values.
///
/// Lifecycle: the first subscriber starts the source; the source's result goes to the subscribers that want only
/// it (``Subscriber/wantsSource``: a data load) and starts a decode per decode key the others use;
/// each decode starts a product per product key in use; a ready product is delivered to its subscribers
/// (those waiting for the store get it once stored). A subscriber that leaves gets `cancelled`; when the last one
/// leaves, the source is cancelled if still running and the machine is finished. Events after that are ignored.
///
/// Every action carries what the shell needs to perform it, and the shell performs every action it gets: a
/// stage that is `.running` here always has work in flight that will report back.
struct FetchStateMachine<
    ID: Hashable & Sendable, DecodeKey: Hashable & Sendable, ProductKey: Hashable & Sendable, Info: Sendable,
    Source: Sendable, Decoded: Sendable, Product: Sendable
>: Sendable {
    struct Subscriber: Sendable {
        let id: ID
        let decodeKey: DecodeKey
        let productKey: ProductKey
        let waitsForStore: Bool
        /// Served with the source itself, before any decode (a data load): it never starts a decode or a product,
        /// and what they do never reaches it.
        var wantsSource = false
        let info: Info
    }

    enum Stage<Value: Sendable>: Sendable {
        case running
        case done(Value)
        case failed(ImageError)
    }

    enum ProductStage: Sendable {
        case running
        case ready(Product, stored: Bool)
        case failed(ImageError)
    }

    enum Action: Sendable {
        /// Start the source (first subscriber).
        case startSource
        /// Cancel the running source (last subscriber left).
        case cancelSource
        /// Decode the source's value for this key, with the info of a subscriber that needs it (the shell must
        /// not look a subscriber up again: it may have left, and the decode must still run for the others).
        case startDecode(DecodeKey, Source, Info)
        /// Transform and store for this key, with the info of a subscriber that needs it.
        case startProduct(ProductKey, Decoded, Source, Info)
        /// Deliver a product.
        case deliver([Subscriber], Product)
        /// Deliver the source to subscribers that want only it.
        case deliverSource([Subscriber], Source)
        /// Fail subscribers.
        case fail([Subscriber], ImageError)
    }

    private(set) var source: Stage<Source>?
    private(set) var subscribers: [ID: Subscriber] = [:]
    private(set) var decodes: [DecodeKey: Stage<Decoded>] = [:]
    private(set) var products: [ProductKey: ProductStage] = [:]
    /// True once the last subscriber left or every subscriber was served; the shell then forgets the job.
    private(set) var isFinished = false
    /// True once a verdict was made for the subscribers of the moment (the download's header check refused the
    /// image under every one of their budgets): the source will fail for them, and a load that comes later, whose
    /// budget may differ, needs a job of its own. The shell then lets nobody join (``FetchJob/subscribe``).
    private(set) var isClosed = false

    init() {}

    /// Subscribers still waiting.
    var subscriberCount: Int { subscribers.count }

    // MARK: Events

    /// Closes the job to newcomers (see ``isClosed``); the subscribers it has keep their places.
    mutating func close() { isClosed = true }

    mutating func subscribe(_ subscriber: Subscriber) -> [Action] {
        guard !isFinished else { return [.fail([subscriber], .cancelled(stage: .download))] }
        subscribers[subscriber.id] = subscriber
        switch source {
        case nil:
            source = .running
            return [.startSource]
        case .running:
            return []
        case .failed(let error):
            subscribers[subscriber.id] = nil
            return [.fail([subscriber], error)]
        case .done(let value):
            guard subscriber.wantsSource else { return advance(subscriber, source: value) }
            return serveSource([subscriber], value)
        }
    }

    mutating func sourceFinished(_ value: Source) -> [Action] {
        guard !isFinished, case .running = source else { return [] }
        source = .done(value)
        let sourceOnly = subscribers.values.filter(\.wantsSource)
        var actions = sourceOnly.isEmpty ? [] : serveSource(sourceOnly, value)
        for subscriber in subscribers.values { actions += advance(subscriber, source: value) }
        return actions
    }

    mutating func sourceFailed(_ error: ImageError) -> [Action] {
        guard !isFinished, case .running = source else { return [] }
        source = .failed(error)
        let failed = Array(subscribers.values)
        subscribers.removeAll()
        isFinished = true
        return failed.isEmpty ? [] : [.fail(failed, error)]
    }

    mutating func decodeFinished(_ key: DecodeKey, _ value: Decoded) -> [Action] {
        guard !isFinished, case .running? = decodes[key], case .done(let sourceValue)? = source else { return [] }
        decodes[key] = .done(value)
        var actions: [Action] = []
        for subscriber in subscribers.values where subscriber.decodeKey == key {
            actions += advance(subscriber, source: sourceValue)
        }
        return actions
    }

    mutating func decodeFailed(_ key: DecodeKey, _ error: ImageError) -> [Action] {
        guard !isFinished, case .running? = decodes[key] else { return [] }
        decodes[key] = .failed(error)
        return failAll(with: error) { $0.decodeKey == key }
    }

    mutating func productReady(_ key: ProductKey, _ product: Product, stored: Bool) -> [Action] {
        guard !isFinished, case .running? = products[key] else { return [] }
        products[key] = .ready(product, stored: stored)
        return deliverReady(key, product, stored: stored)
    }

    mutating func productStored(_ key: ProductKey) -> [Action] {
        guard !isFinished, case .ready(let product, stored: false)? = products[key] else { return [] }
        products[key] = .ready(product, stored: true)
        return deliverReady(key, product, stored: true)
    }

    mutating func productFailed(_ key: ProductKey, _ error: ImageError) -> [Action] {
        guard !isFinished, case .running? = products[key] else { return [] }
        products[key] = .failed(error)
        return failAll(with: error) { $0.productKey == key }
    }

    /// A subscriber leaves: it gets `cancelled`; the last one out cancels a running source.
    mutating func cancel(_ id: ID) -> [Action] {
        guard !isFinished, let subscriber = subscribers.removeValue(forKey: id) else { return [] }
        var actions: [Action] = [.fail([subscriber], .cancelled(stage: .download))]
        if subscribers.isEmpty {
            isFinished = true
            if case .running? = source { actions.append(.cancelSource) }
        }
        return actions
    }

    // MARK: Helpers

    private mutating func serveSource(_ served: [Subscriber], _ value: Source) -> [Action] {
        for subscriber in served { subscribers[subscriber.id] = nil }
        if subscribers.isEmpty { isFinished = true }
        return [.deliverSource(served, value)]
    }

    private mutating func advance(_ subscriber: Subscriber, source value: Source) -> [Action] {
        switch decodes[subscriber.decodeKey] {
        case nil:
            decodes[subscriber.decodeKey] = .running
            return [.startDecode(subscriber.decodeKey, value, subscriber.info)]
        case .running?:
            return []
        case .failed(let error)?:
            return failAll(with: error) { $0.id == subscriber.id }
        case .done(let decoded)?:
            switch products[subscriber.productKey] {
            case nil:
                products[subscriber.productKey] = .running
                return [.startProduct(subscriber.productKey, decoded, value, subscriber.info)]
            case .running?:
                return []
            case .failed(let error)?:
                return failAll(with: error) { $0.id == subscriber.id }
            case .ready(let product, let stored)?:
                return deliverReady(subscriber.productKey, product, stored: stored)
            }
        }
    }

    private mutating func deliverReady(_ key: ProductKey, _ product: Product, stored: Bool) -> [Action] {
        let ready = subscribers.values.filter { $0.productKey == key && (stored || !$0.waitsForStore) }
        guard !ready.isEmpty else { return [] }
        for subscriber in ready { subscribers[subscriber.id] = nil }
        if subscribers.isEmpty { isFinished = true }
        return [.deliver(ready, product)]
    }

    private mutating func failAll(with error: ImageError, where predicate: (Subscriber) -> Bool) -> [Action] {
        let failed = subscribers.values.filter(predicate)
        guard !failed.isEmpty else { return [] }
        for subscriber in failed { subscribers[subscriber.id] = nil }
        if subscribers.isEmpty { isFinished = true }
        return [.fail(failed, error)]
    }
}
