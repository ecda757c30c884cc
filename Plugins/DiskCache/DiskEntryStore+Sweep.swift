import Foundation

/// The directory as a whole: whose it is (the marker), and the sweep that expires, trims and cleans it.
///
/// The rule (DESIGN §9, "a cache deletes only what it can prove it wrote"): files are deleted only in a directory
/// that carries the marker, and there only under names the cache writes — entry files (`v2-<digest>[.ext]`),
/// its temporary files, and entry files of version 1 (`<SHA-256>[.ext]`, which an earlier version of this cache
/// wrote in its marked directories). Any other file, any subdirectory and the marker itself are never touched.
extension DiskEntryStore {
    // MARK: Ownership

    /// Throws ``DiskCacheDirectoryNotOwned`` unless the cache may write in its directory. A directory not looked at
    /// since it was missing is adopted first (created and marked when missing or empty).
    func checkWritable() throws {
        switch ownership.value {
        case .owned: return
        case .foreign: throw DiskCacheDirectoryNotOwned(directory: directory)
        case .unknown: try adoptDirectoryOrThrow()
        }
    }

    /// Adopts the directory (see ``adoptDirectory()``) or throws ``DiskCacheDirectoryNotOwned``.
    func adoptDirectoryOrThrow() throws {
        guard try adoptDirectory() else { throw DiskCacheDirectoryNotOwned(directory: directory) }
    }

    /// Makes the directory the cache's own when it may: it carries the marker already, or it is created now or
    /// found empty (and is then marked). A directory that holds anything else stays foreign. Records the answer.
    ///
    /// - Returns: whether the cache owns the directory now.
    /// - Throws: ``DiskCacheIOError`` when the directory cannot be created or listed.
    @discardableResult
    func adoptDirectory() throws -> Bool {
        if isMarked() {
            ownership.value = .owned
            return true
        }
        if try !fs.makeDirectory(directory) {
            // It existed: only an empty directory (or one another process marked meanwhile) may be adopted.
            guard let listing = try fs.listDirectory(directory) else {
                ownership.value = .unknown
                return false
            }
            return recordOwnership(of: listing)
        }
        return markEmptyDirectory()
    }

    /// Records whose the listed directory is, marking it when it is empty; returns whether the cache owns it.
    private func recordOwnership(of listing: (files: [DirectoryItem], others: [String])) -> Bool {
        if listing.files.contains(where: { $0.name == Self.markerName }) {
            ownership.value = .owned
            return true
        }
        guard listing.files.isEmpty && listing.others.isEmpty else {
            ownership.value = .foreign
            return false
        }
        return markEmptyDirectory()
    }

    /// Creates the marker in a directory just created or found empty. Owned once the marker is there (this
    /// process's or another's); a marker that can't be made (a read-only directory) leaves the question open.
    private func markEmptyDirectory() -> Bool {
        let marker = path(Self.markerName)
        if let fd = try? fs.createExclusive(marker) { close(fd) }
        let marked = isMarked()
        ownership.value = marked ? .owned : .unknown
        return marked
    }

    private func isMarked() -> Bool {
        guard let info = try? fs.status(path(Self.markerName)) else { return false }
        return (info.st_mode & S_IFMT) == S_IFREG
    }

    // MARK: Sweep

    /// Walks the directory and records whose it is. In a directory the cache owns, removes expired entries (every
    /// entry with `removeEverything`), entries of format version 1 and stale temporaries, then, when the entries
    /// exceed `maxSize` (> 0), the least recently accessed until they fit in `lowWater`. An empty directory
    /// becomes owned. In a foreign directory nothing is removed, and the report is empty (nothing there is the
    /// cache's).
    ///
    /// A missing directory is empty (the next write recreates and marks it). Files that vanish meanwhile (another
    /// process) are simply skipped.
    func sweep(now: Double, maxSize: Int, lowWater: Int, removeEverything: Bool = false) throws -> SweepReport {
        guard let listing = try fs.listDirectory(directory) else { return SweepReport() }
        // Nothing in a foreign directory is the cache's: nothing to remove, nothing to count.
        guard recordOwnership(of: listing) else { return SweepReport() }
        var report = SweepReport()
        var live: [DirectoryItem] = []
        live.reserveCapacity(listing.files.count)
        let maxDiskAge = limits.maxDiskAge
        for item in listing.files {
            let drop: Bool
            let isEntry = DiskFileNaming.isEntryName(item.name)
            if isEntry {
                drop = removeEverything || maxDiskAge.map { now - item.accessTime > $0 } ?? false
            } else if DiskFileNaming.isLegacyEntryName(item.name) {
                // An entry of format version 1: no lookup finds it (a clean miss); its space is reclaimed.
                drop = true
            } else if DiskFileNaming.isTemporaryName(item.name) {
                drop = now - item.accessTime > Self.staleTemporaryAge
            } else {
                // Not a name the cache writes (the marker, or someone else's file): never touched.
                drop = false
            }
            if drop {
                if (try? fs.remove(path(item.name))) != nil { report.removed += 1 }
            } else if isEntry {
                live.append(item)
                report.totalSize += item.size
            }
        }
        report.count = live.count
        guard maxSize > 0, report.totalSize > maxSize else { return report }
        live.sort { $0.accessTime < $1.accessTime }
        for item in live {
            guard report.totalSize > lowWater else { break }
            // A file already gone (another process swept it) counts as removed too.
            guard (try? fs.remove(path(item.name))) != nil else { continue }
            report.totalSize -= item.size
            report.count -= 1
            report.removed += 1
        }
        return report
    }

    /// Size and count of the entry files now in the directory (none in a foreign directory).
    func measure() throws -> (size: Int, count: Int) {
        guard !ownership.isForeign, let listing = try fs.listDirectory(directory) else { return (0, 0) }
        var size = 0
        var count = 0
        for item in listing.files where DiskFileNaming.isEntryName(item.name) {
            size += item.size
            count += 1
        }
        return (size, count)
    }
}
