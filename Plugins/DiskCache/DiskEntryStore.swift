import Foundation
import ImageCore

/// One entry read from disk: the bytes as stored and their metadata.
public struct DiskCacheEntry: Sendable {
    /// The stored bytes.
    public var data: Data
    /// The metadata stored with them; `size` is the byte count and `lastAccess` the access time the cache
    /// maintains.
    public var metadata: CacheEntryMetadata

    /// Creates an entry.
    public init(data: Data, metadata: CacheEntryMetadata) {
        self.data = data
        self.metadata = metadata
    }

    /// No bytes, no metadata: what a read fills in (made once; `CacheEntryMetadata()` is not free).
    static let empty = DiskCacheEntry(data: Data(), metadata: CacheEntryMetadata())
}

/// What a sweep found and did.
struct SweepReport {
    /// Bytes of entry files left.
    var totalSize = 0
    /// Entry files left.
    var count = 0
    /// Files removed (expired, over the limit, stale temporaries, foreign).
    var removed = 0
}

/// The blocking file work of a ``DiskCache``: read, write, remove and sweep entry files in one directory.
///
/// Stateless (all state is on disk), so it is safe from any thread and any number of processes: entries are
/// published by rename, a reader holds an open descriptor, and every step tolerates files that vanish. A class
/// (immutable), so a hit passes one reference instead of copying the paths and handles.
final class DiskEntryStore: Sendable {
    /// Temporary files older than this are leftovers of a crashed writer.
    static let staleTemporaryAge: TimeInterval = 600
    /// Marks a directory the cache owns (see ``DiskDirectoryOwnership``): only there does it read, write or delete,
    /// so a cache pointed at a directory full of other files by mistake never deletes one of them.
    static let markerName = ".webimage-cache"

    let directory: String
    /// `directory` as bytes, for paths built on the stack.
    let directoryBytes: [UInt8]
    let fs: DiskFileSystem
    /// The age limit in force (it may change while the cache runs).
    let limits: DiskCacheLimits
    let accessTimeGranularity: TimeInterval
    let fsyncOnWrite: Bool
    /// True when a test clock is in use, so writes stamp the access time themselves.
    let stampsWrites: Bool
    /// Hits check the body against the checksum in the header.
    let verifiesChecksums: Bool
    /// Whether the directory carries the marker, as last seen (by the start-up sweep, every sweep since, and the
    /// write that created the directory).
    let ownership = DiskOwnershipState()

    init(
        directory: String, fs: DiskFileSystem, limits: DiskCacheLimits, accessTimeGranularity: TimeInterval,
        fsyncOnWrite: Bool, stampsWrites: Bool, verifiesChecksums: Bool = false
    ) {
        self.verifiesChecksums = verifiesChecksums
        self.directory = directory
        directoryBytes = Array(directory.utf8)
        self.fs = fs
        self.limits = limits
        self.accessTimeGranularity = accessTimeGranularity
        self.fsyncOnWrite = fsyncOnWrite
        self.stampsWrites = stampsWrites
    }

    func path(_ name: String) -> String { directory + "/" + name }
    func path(_ name: DiskEntryName) -> String { directory + "/" + name.fileName }

    // MARK: Read

    /// What a read of one entry file found.
    enum ReadResult {
        /// The entry was read into the caller's value.
        case hit
        /// Absent or expired.
        case miss
        /// Not served, for this reason (a corrupt or oversize file was also removed).
        case bad(DiskReadProblem, detail: String)
    }

    /// Reads the entry file `name` for `key` into memory, never more than `maxBodySize` body bytes (plus the
    /// header), with its extended data.
    ///
    /// Expired files are misses and are removed. Garbage, truncated, hostile and foreign-key files are `.corrupt`
    /// and removed; files larger than the cap are `.oversize` and removed without being read. A file whose size or
    /// times changed while it was read (truncated or extended in place by someone else) is read once more; changed
    /// again, it is `.changed` and left alone (the rename of a new entry replaces it). So the bytes returned are
    /// one whole entry file as it was between two `fstat`s with equal size, modification and change times. Every
    /// writer of this cache publishes a new file by rename, which an open descriptor never sees. The `fstat` after
    /// the read is needed: a `read` racing a truncation can return the full count with the cut page's tail zeroed,
    /// so a count alone proves nothing. A same-size overwrite in place by another program is caught only by the
    /// body checksum (``DiskCacheConfiguration/verifiesChecksums``): a write moves the change time before it
    /// copies its bytes, so a read overlapping a rewrite's last write can see new times and torn bytes.
    ///
    /// Five system calls on a hit: `open`, `fstat`, `pread`, `fstat`, `close` (plus `fgetxattr` when the entry
    /// has extended data, and `futimens` when its access time is refreshed).
    ///
    /// A hit fills `entry` (whose metadata must start empty) in place rather than returning it: the metadata is
    /// large, and a hit should move it as few times as it can.
    func read(name: DiskEntryName, key: String, now: Double, maxBodySize: Int, into entry: inout DiskCacheEntry)
        throws -> ReadResult
    {
        if ownership.isForeign { return .miss }
        return try name.withPath(in: directoryBytes) { path in
            let first = try readOnce(path: path, key: key, now: now, maxBodySize: maxBodySize, into: &entry)
            guard case .bad(.changed, _) = first else { return first }
            return try readOnce(path: path, key: key, now: now, maxBodySize: maxBodySize, into: &entry)
        }
    }

    /// One attempt. `path` is a C string on the stack: a String of it is made only for errors and removals.
    private func readOnce(
        path: UnsafePointer<CChar>, key: String, now: Double, maxBodySize: Int, into entry: inout DiskCacheEntry
    ) throws -> ReadResult {
        guard let fd = try fs.openForReading(path) else { return .miss }
        defer { close(fd) }
        let info = try fs.status(of: fd, path: path)
        let size = Int(info.st_size)
        let accessTime = info.st_mtim.seconds
        if let maxDiskAge = limits.maxDiskAge, now - accessTime > maxDiskAge {
            removeIfUnchanged(String(cString: path), info)
            return .miss
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, size >= DiskEntryCodec.fixedHeaderSize else {
            removeIfUnchanged(String(cString: path), info)
            return .bad(.corrupt, detail: "not a regular file of at least a header (\(size) bytes)")
        }
        // Subtractions, so a cap of Int.max cannot overflow.
        guard size - DiskEntryCodec.fixedHeaderSize - DiskEntryCodec.maxMetadataSize <= maxBodySize else {
            removeIfUnchanged(String(cString: path), info)
            return .bad(.oversize, detail: "\(size) bytes on disk, entry size limit \(maxBodySize)")
        }
        let (base, sizeClass) = DiskReadBuffers.take(size + 1)
        var handedOff = false
        defer { if !handedOff { DiskReadBuffers.release(base, sizeClass: sizeClass) } }
        let got = try fs.readUpTo(fd, into: base, count: size + 1, path: path)
        guard got == size else {
            return .bad(.changed, detail: "\(got) bytes read of a file of \(size) (changed in place while read)")
        }
        // Before decoding: a torn read must not be taken for a corrupt file and removed.
        let after = try fs.status(of: fd, path: path)
        guard after.st_size == info.st_size, after.st_mtim.isSame(as: info.st_mtim),
            after.st_ctim.isSame(as: info.st_ctim)
        else { return .bad(.changed, detail: "changed in place while read") }
        let offset: Int
        do {
            offset = try DiskEntryCodec.decode(
                UnsafeRawBufferPointer(start: base, count: size), maxBodySize: maxBodySize, expectedKey: key,
                verifiesChecksum: verifiesChecksums, into: &entry.metadata)
        } catch {
            removeIfUnchanged(String(cString: path), info)
            return .bad(.corrupt, detail: "\(error)")
        }
        if info.st_mode & DiskExtendedData.modeFlag != 0 {
            let value = try fs.extendedAttribute(
                fd, name: DiskExtendedData.attributeName,
                limit: DiskExtendedData.headerSize + DiskExtendedData.maxSize, path: String(cString: path))
            if let value {
                guard let extended = DiskExtendedData.decode(value) else {
                    removeIfUnchanged(String(cString: path), info)
                    return .bad(.corrupt, detail: "extended data attribute of \(value.count) bytes is not valid")
                }
                entry.metadata.extendedData = extended
            }
        }
        if now - accessTime >= accessTimeGranularity {
            fs.setAccessTime(fd, to: now)
            entry.metadata.lastAccess = Date(timeIntervalSince1970: now)
        } else {
            entry.metadata.lastAccess = Date(timeIntervalSince1970: accessTime)
        }
        let bodyCount = size - offset
        guard bodyCount > 0 else {
            entry.data = Data()
            return .hit
        }
        // Hand the buffer to Data without copying. The header before the body is parsed and no longer needed:
        // its last 16 bytes (offset ≥ 17) keep the buffer's address and size class, so the deallocator, which
        // gives the buffer back to the pool, captures nothing.
        handedOff = true
        let body = base + offset
        (body - 16).storeBytes(of: sizeClass, toByteOffset: 0, as: Int.self)
        (body - 8).storeBytes(of: base, toByteOffset: 0, as: UnsafeMutableRawPointer.self)
        entry.data = Data(
            bytesNoCopy: body, count: bodyCount,
            deallocator: .custom { body, _ in
                DiskReadBuffers.release(
                    (body - 8).loadUnaligned(as: UnsafeMutableRawPointer.self),
                    sizeClass: (body - 16).loadUnaligned(as: Int.self))
            })
        return .hit
    }

    /// True when `name` exists as a regular file that has not expired (never in a directory the cache does not own).
    func contains(name: DiskEntryName, now: Double) -> Bool {
        guard !ownership.isForeign, let info = try? fs.status(path(name)), (info.st_mode & S_IFMT) == S_IFREG else {
            return false
        }
        if let maxDiskAge = limits.maxDiskAge, now - info.st_mtim.seconds > maxDiskAge { return false }
        return true
    }

    /// Removes `path` only if it is still the file described by `info` (another process may have replaced it
    /// with a good entry since we opened it), and only in a directory the cache owns.
    private func removeIfUnchanged(_ path: String, _ info: stat) {
        guard ownership.isOwned, let current = try? fs.status(path), current.st_ino == info.st_ino,
            current.st_dev == info.st_dev
        else { return }
        _ = try? fs.remove(path)
    }

    // MARK: Write

    /// Writes an entry atomically: a temporary file in the directory (header and body in one `writev`, the extended
    /// data of `metadata` in an attribute), then a rename over `name`.
    ///
    /// The temporary file is named after the entry and the process (work on one entry never runs twice at once in a
    /// process), so the directory sees the same few names come and go, as a plain writer's would; a leftover of a
    /// crashed writer under that name makes it take a fresh one. On any failure the temporary file is removed and
    /// the previous entry is untouched. Recreates (and marks) the directory when it was deleted.
    /// - Parameter measuresReplaced: `lstat` the entry being replaced, for size accounting (only needed when
    ///   the cache has a size limit).
    /// - Returns: bytes written and bytes of the entry it replaced (0 when not measured).
    /// - Throws: ``DiskCacheIOError``, ``DiskEntryCodecError`` when the metadata cannot be encoded, or
    ///   ``DiskCacheDirectoryNotOwned`` when the directory is not the cache's (nothing is written).
    func write(
        name: DiskEntryName, data: Data, metadata: CacheEntryMetadata, now: Double, measuresReplaced: Bool = true
    )
        throws -> (written: Int, replaced: Int)
    {
        try checkWritable()
        let checksum = data.withUnsafeBytes { XXH64.hash($0) }
        let header = try DiskEntryCodec.header(for: metadata, bodyLength: data.count, bodyChecksum: checksum)
        let extended = metadata.extendedData.map(DiskExtendedData.encode)
        let extraMode = extended == nil ? 0 : DiskExtendedData.modeFlag
        var temporary = path(DiskFileNaming.temporaryName(for: name))
        let fd: Int32
        do {
            fd = try fs.createExclusive(temporary, extraMode: extraMode)
        } catch let error as DiskCacheIOError where error.errno == ENOENT || error.errno == EEXIST {
            // The directory was deleted under us (recreate it), or a leftover holds the name (take another).
            if error.errno == ENOENT { try adoptDirectoryOrThrow() }
            temporary = path(DiskFileNaming.temporaryName())
            fd = try fs.createExclusive(temporary, extraMode: extraMode)
        }
        var published = false
        defer { if !published { _ = try? fs.remove(temporary) } }
        do {
            try header.withUnsafeBytes { head in
                try data.withUnsafeBytes { body in try fs.writeAll(fd, head, body, path: temporary) }
            }
            if let extended {
                try fs.setExtendedAttribute(fd, name: DiskExtendedData.attributeName, value: extended, path: temporary)
                try checkModeFlag(fd, path: temporary)
            }
            if stampsWrites { fs.setAccessTime(fd, to: now) }
            if fsyncOnWrite { try fs.sync(fd, path: temporary) }
        } catch {
            close(fd)
            throw error
        }
        try fs.closeChecked(fd, path: temporary)
        let final = path(name)
        let replaced = measuresReplaced ? ((try? fs.status(final)).flatMap { $0 }.map { Int($0.st_size) } ?? 0) : 0
        try fs.move(temporary, to: final)
        published = true
        if fsyncOnWrite { syncDirectory() }
        return (header.count + data.count, replaced)
    }

    private func syncDirectory() {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Removes entry `name`; returns the bytes it held (0 when absent, or when the directory is not the cache's).
    func remove(name: DiskEntryName) throws -> Int {
        guard ownership.isOwned else { return 0 }
        let path = path(name)
        guard let info = try fs.status(path) else { return 0 }
        return try fs.remove(path) ? Int(info.st_size) : 0
    }
}
