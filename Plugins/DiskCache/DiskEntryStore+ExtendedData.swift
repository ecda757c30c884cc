import Foundation
import ImageCore

/// Changing an entry's extended data in place (the attribute and the mode bit that flags it; see
/// ``DiskExtendedData``).
extension DiskEntryStore {
    /// Throws `EOPNOTSUPP` when the file system dropped the mode bit that flags extended data (reads would not
    /// look for it).
    func checkModeFlag(_ fd: Int32, path: String) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw DiskCacheIOError(operation: DiskOperation.stat.rawValue, path: path, errno: errno)
        }
        guard info.st_mode & DiskExtendedData.modeFlag != 0 else {
            throw DiskCacheIOError(operation: DiskOperation.chmod.rawValue, path: path, errno: EOPNOTSUPP)
        }
    }

    /// Sets (or with nil removes) the extended data of the entry file `name` of `key` in place: the bytes are not
    /// rewritten. False when there is no such entry (absent, expired, or another key's file).
    ///
    /// The attribute belongs to the file: when another process replaces the entry meanwhile, the change lands on
    /// the file it opened (before the replacement, which then wins) or on the new one (after it) — never on a mix.
    func setExtendedData(name: DiskEntryName, key: String, data: Data?, now: Double) throws -> Bool {
        try checkWritable()
        let path = path(name)
        guard let fd = try fs.openForReading(path) else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw DiskCacheIOError(operation: DiskOperation.stat.rawValue, path: path, errno: errno)
        }
        if let maxDiskAge = limits.maxDiskAge, now - info.st_mtim.seconds > maxDiskAge { return false }
        guard (info.st_mode & S_IFMT) == S_IFREG, try fileHoldsKey(fd, key: key, size: Int(info.st_size), path: path)
        else { return false }
        let permissions = info.st_mode & 0o7777
        if let data {
            let value = DiskExtendedData.encode(data)
            try fs.setExtendedAttribute(fd, name: DiskExtendedData.attributeName, value: value, path: path)
            if permissions & DiskExtendedData.modeFlag == 0 {
                try fs.setMode(fd, permissions | DiskExtendedData.modeFlag, path: path)
                try checkModeFlag(fd, path: path)
            }
        } else {
            // Flag off first: a reader that still sees the flag finds the attribute or nothing, never a stale one.
            if permissions & DiskExtendedData.modeFlag != 0 {
                try fs.setMode(fd, permissions & ~DiskExtendedData.modeFlag, path: path)
            }
            try fs.setExtendedAttribute(fd, name: DiskExtendedData.attributeName, value: nil, path: path)
        }
        return true
    }

    /// True when the open entry file's header names `key` (reads the header only).
    private func fileHoldsKey(_ fd: Int32, key: String, size: Int, path: String) throws -> Bool {
        guard size >= DiskEntryCodec.fixedHeaderSize else { return false }
        var fixed = [UInt8](repeating: 0, count: DiskEntryCodec.fixedHeaderSize)
        guard try path.withCString({ try fs.readUpTo(fd, into: &fixed, count: fixed.count, path: $0) }) == fixed.count,
            let blockLength = DiskEntryCodec.metadataLength(fixedHeader: fixed),
            DiskEntryCodec.fixedHeaderSize + blockLength <= size
        else { return false }
        var header = [UInt8](repeating: 0, count: DiskEntryCodec.fixedHeaderSize + blockLength)
        guard
            try path.withCString({ try fs.readUpTo(fd, into: &header, count: header.count, path: $0) }) == header.count
        else { return false }
        return DiskEntryCodec.headerNames(key, header: header, fileSize: size)
    }
}
