import Foundation
import Synchronization

/// The one registry through which a loader's downloads are cancelled, whoever started them: the managers' download
/// jobs and the admission queue in front of the loader register here by the URL their caller gave, so a loader's
/// `cancelAllDownloads()` or `cancelDownloads(for:)` ends all of them together.
///
/// What a cancel promises (what `HTTPLoader`'s control methods document):
/// - every download registered before the call is ended, its loads complete with `cancelled` — the ones still
///   waiting for admission too, which then never start;
/// - when the call returns, no manager job of a cancelled download can be joined any more: a load made after it
///   starts a new download;
/// - matching is by the URL the caller gave (``ImageManager/loadImage(with:options:context:progress:completed:)``'s
///   URL), not by what a request modifier or a redirect made of it.
///
/// Entries run in order: first downloads waiting for admission (so a place freed by a cancelled transfer admits
/// none of them), then manager jobs, then whatever the loader registered itself. Cancel handlers run outside the
/// lock, on the calling thread. Thread-safe.
public final class DownloadControl: Sendable {
    /// When an entry's cancel runs relative to the others.
    public enum Stage: Int, Comparable, Sendable {
        /// A download waiting for admission (counted in the number a cancel returns).
        case waiting
        /// A manager's download job (its loads; not counted: its transfer or waiting place is).
        case job
        /// A transfer of the loader's own (counted).
        case transfer

        /// Earlier stages run first.
        public static func < (lhs: Stage, rhs: Stage) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// A registration; ``unregister()`` removes it (idempotent), so a download that ended is never cancelled.
    public struct Registration: Sendable {
        fileprivate let control: DownloadControl?
        fileprivate let id: UInt64

        /// Removes the entry.
        public func unregister() { control?.remove(id) }

        /// A registration with no control (a loader without one).
        public static let none = Registration(control: nil, id: 0)
    }

    private struct Entry {
        let url: String
        let stage: Stage
        let cancel: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 1
    }

    private let state = Mutex(State())

    /// Creates an empty registry.
    public init() {}

    /// Registers a download of `url` (the caller's URL) at `stage`; `cancel` runs at most once, when a cancel of
    /// this control selects it before it unregistered.
    public func register(url: URL, stage: Stage, cancel: @escaping @Sendable () -> Void) -> Registration {
        let key = url.absoluteString
        let id = state.withLock { state -> UInt64 in
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(url: key, stage: stage, cancel: cancel)
            return id
        }
        return Registration(control: self, id: id)
    }

    /// Cancels every registered download; returns how many downloads were waiting for admission or were the
    /// loader's own transfers.
    @discardableResult
    public func cancelAll() -> Int { cancel { _ in true } }

    /// Cancels the registered downloads of `url` (compared by absolute string); returns the count as
    /// ``cancelAll()`` does.
    @discardableResult
    public func cancel(url: URL) -> Int {
        let key = url.absoluteString
        return cancel { $0 == key }
    }

    /// The number of downloads registered (for tests and metrics).
    public var count: Int { state.withLock { $0.entries.count } }

    private func cancel(where matches: (String) -> Bool) -> Int {
        let selected = state.withLock { state -> [Entry] in
            let ids = state.entries.filter { matches($0.value.url) }.keys
            return ids.compactMap { state.entries.removeValue(forKey: $0) }
        }
        var counted = 0
        for stage in [Stage.waiting, .job, .transfer] {
            for entry in selected where entry.stage == stage {
                if stage != .job { counted += 1 }
                entry.cancel()
            }
        }
        return counted
    }

    private func remove(_ id: UInt64) { _ = state.withLock { $0.entries.removeValue(forKey: id) } }
}
