import Synchronization

/// The cache was opened on a directory it does not own: the directory is not empty and has no
/// `.webimage-cache` marker, so the cache neither writes, nor serves, nor deletes anything there.
///
/// A store (and ``DiskCache/setExtendedData(_:forKey:)``, ``DiskCache/migrate(from:)``) fails with `cacheFailure`
/// caused by this error. Give the cache a directory of its own — one that does not exist yet or is empty; the
/// cache creates its marker there — or, if the directory really is this cache's (its marker was deleted), create
/// an empty file named `.webimage-cache` in it.
public struct DiskCacheDirectoryNotOwned: Error, Sendable, Hashable, CustomStringConvertible {
    /// The directory.
    public let directory: String

    /// Creates the error.
    public init(directory: String) { self.directory = directory }

    /// "cache directory /path is not empty and has no .webimage-cache marker: …".
    public var description: String {
        "cache directory \(directory) is not empty and has no \(DiskEntryStore.markerName) marker: the cache keeps"
            + " nothing there and deletes nothing there (give it a new or empty directory)"
    }
}

/// What a ``DiskEntryStore`` knows about its directory: whether it carries the cache's marker.
///
/// The marker is the cache's proof that the files there with its names are its own: a cache deletes only in a
/// directory that carries it, and reads and writes only there too (a cache that could not delete what it wrote
/// could not keep its size limit, nor honour a remove or a clear). The cache marks a directory it creates or
/// finds empty, never one that holds anything else.
enum DiskDirectoryOwnership: UInt8, Sendable {
    /// Not looked at yet, or the directory did not exist when last looked at (the next write creates and marks
    /// it). Reads answer from what is there, nothing is deleted.
    case unknown
    /// The directory carries the marker.
    case owned
    /// The directory is not empty and has no marker: nothing is read, written or deleted there.
    case foreign
}

/// The ownership, read by every hit and store (an atomic: no lock on the hit path).
final class DiskOwnershipState: Sendable {
    private let raw = Atomic<UInt8>(DiskDirectoryOwnership.unknown.rawValue)

    var value: DiskDirectoryOwnership {
        get { DiskDirectoryOwnership(rawValue: raw.load(ordering: .acquiring)) ?? .unknown }
        set { raw.store(newValue.rawValue, ordering: .releasing) }
    }

    var isOwned: Bool { value == .owned }
    var isForeign: Bool { value == .foreign }
}
