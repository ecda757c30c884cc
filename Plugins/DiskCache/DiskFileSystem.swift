internal import CXattr
import Foundation
import Synchronization

/// A failed system call: which operation, on which path, with which `errno`.
public struct DiskCacheIOError: Error, Sendable, CustomStringConvertible, Hashable {
    /// The operation that failed, e.g. `"write"`.
    public let operation: String
    /// The file or directory it acted on.
    public let path: String
    /// The POSIX error number (`ENOSPC`, `EROFS`, …).
    public let errno: Int32

    /// Creates an error.
    public init(operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// "write /path: No space left on device (errno 28)".
    public var description: String {
        "\(operation) \(path): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// The file operations the cache performs, as named by the fault injector.
enum DiskOperation: String, Sendable, Hashable {
    case open, create, write, fsync, close, rename, unlink, mkdir, read, stat, readdir, getxattr, setxattr, chmod
}

/// A test seam: makes chosen operations fail with a chosen `errno`, as a full or read-only disk would, or
/// holds them at a gate.
///
/// Thread-safe (a `Mutex` holds the rules). Used through ``DiskCacheConfiguration``'s internal `faults`.
final class DiskFaultInjector: Sendable {
    private let rules = Mutex<[DiskOperation: Int32]>([:])
    private let gates = Mutex<[DiskOperation: DiskGate]>([:])

    /// Makes `operation` fail with `errno` until cleared.
    func fail(_ operation: DiskOperation, errno: Int32) { rules.withLock { $0[operation] = errno } }
    /// Removes every rule (gates stay until opened).
    func clear() { rules.withLock { $0 = [:] } }

    /// Holds every thread that reaches `operation` until the returned gate is opened.
    func hold(_ operation: DiskOperation) -> DiskGate {
        let gate = DiskGate()
        gates.withLock { $0[operation] = gate }
        return gate
    }

    func check(_ operation: DiskOperation, _ path: String) throws(DiskCacheIOError) {
        if let gate = gates.withLock({ $0[operation] }) { gate.pass() }
        if let code = rules.withLock({ $0[operation] }) {
            throw DiskCacheIOError(operation: operation.rawValue, path: path, errno: code)
        }
    }
}

/// Threads arriving at a held operation wait here until the test opens the gate; the test can wait for a
/// number of arrivals (events, not sleeps).
final class DiskGate: @unchecked Sendable {
    // @unchecked Sendable: `arrived` and `isOpen` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var arrived = 0
    private var isOpen = false

    /// Called by the cache's thread: counts the arrival and waits for the gate to open.
    func pass() {
        condition.lock()
        arrived += 1
        condition.broadcast()
        while !isOpen { condition.wait() }
        condition.unlock()
    }

    /// Waits until `count` threads have arrived in all.
    func waitForArrivals(_ count: Int) {
        condition.lock()
        while arrived < count { condition.wait() }
        condition.unlock()
    }

    /// Threads that arrived so far.
    var arrivals: Int {
        condition.lock()
        defer { condition.unlock() }
        return arrived
    }

    /// Lets every waiting and later thread through.
    func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A regular file found in the cache directory.
struct DirectoryItem {
    let name: String
    let size: Int
    /// Modification time, which the cache uses as its access time.
    let accessTime: Double
}

/// Thin, throwing wrappers over the POSIX calls the cache needs, with the fault seam in front of each.
///
/// Stateless apart from the injector; safe from any thread. Every call blocks: run it on the cache's queues.
struct DiskFileSystem: Sendable {
    let faults: DiskFaultInjector?

    private func check(_ operation: DiskOperation, _ path: String) throws {
        if let faults { try faults.check(operation, path) }
    }

    private func failure(_ operation: DiskOperation, _ path: String) -> DiskCacheIOError {
        DiskCacheIOError(operation: operation.rawValue, path: path, errno: errno)
    }

    /// Creates `path` and its parents (mode 0755); an existing directory is fine.
    /// - Returns: true when this call created `path` itself (false when it existed).
    @discardableResult
    func makeDirectory(_ path: String) throws -> Bool {
        try check(.mkdir, path)
        if mkdir(path, 0o755) == 0 { return true }
        if errno == EEXIST { return false }
        guard errno == ENOENT else { throw failure(.mkdir, path) }
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty, parent != path else { throw failure(.mkdir, path) }
        try makeDirectory(parent)
        if mkdir(path, 0o755) == 0 { return true }
        if errno == EEXIST { return false }
        throw failure(.mkdir, path)
    }

    /// Opens `path` for reading; nil when it does not exist. Non-blocking: a FIFO in an entry's place would wait for
    /// a writer forever before the reader could see it is no regular file; a regular file reads the same.
    func openForReading(_ path: String) throws -> Int32? {
        try check(.open, path)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd >= 0 { return fd }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw failure(.open, path)
    }

    /// Opens the C-string `path` for reading; nil when it does not exist. (The hit path: no String is made
    /// unless a fault is injected or the call fails.)
    func openForReading(_ path: UnsafePointer<CChar>) throws -> Int32? {
        if let faults { try faults.check(.open, String(cString: path)) }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd >= 0 { return fd }
        let code = errno
        if code == ENOENT || code == ENOTDIR { return nil }
        throw DiskCacheIOError(operation: DiskOperation.open.rawValue, path: String(cString: path), errno: code)
    }

    /// Creates a new file exclusively (mode 0644, plus `extraMode`, less the umask).
    func createExclusive(_ path: String, extraMode: mode_t = 0) throws -> Int32 {
        try check(.create, path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644 | extraMode)
        guard fd >= 0 else { throw failure(.open, path) }
        return fd
    }

    /// Writes all of `buffer` at the current offset.
    func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String) throws {
        try check(.write, path)
        var offset = 0
        while offset < buffer.count {
            let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw failure(.write, path)
            }
            offset += written
        }
    }

    /// Writes `first` then `second` at the current offset, in one `writev` when the kernel takes it all (the
    /// header and the body of an entry: one system call instead of two).
    func writeAll(_ fd: Int32, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, path: String)
        throws
    {
        try check(.write, path)
        var vectors = [
            iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count),
        ]
        var written = -1
        while written < 0 {
            written = writev(fd, &vectors, 2)
            if written < 0 && errno != EINTR { throw failure(.write, path) }
        }
        // A short write (a full disk, a signal): finish each part with plain writes.
        let firstDone = min(written, first.count)
        if firstDone < first.count {
            try writeAll(fd, UnsafeRawBufferPointer(rebasing: first[firstDone...]), path: path)
        }
        let secondDone = written - firstDone
        if secondDone < second.count {
            try writeAll(fd, UnsafeRawBufferPointer(rebasing: second[secondDone...]), path: path)
        }
    }

    /// `fstat` of an open file (`path`, a C string, names it in errors).
    func status(of fd: Int32, path: UnsafePointer<CChar>) throws -> stat {
        if let faults { try faults.check(.stat, String(cString: path)) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            throw DiskCacheIOError(operation: DiskOperation.stat.rawValue, path: String(cString: path), errno: code)
        }
        return info
    }

    /// Reads from offset 0 into `buffer` until `count` bytes or the end of the file; returns the bytes read. One
    /// `pread` when the file is shorter than `count` (a regular file reads short only at its end).
    func readUpTo(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, path: UnsafePointer<CChar>)
        throws -> Int
    {
        if let faults { try faults.check(.read, String(cString: path)) }
        var offset = 0
        while offset < count {
            let got = pread(fd, buffer + offset, count - offset, off_t(offset))
            if got < 0 {
                let code = errno
                if code == EINTR { continue }
                throw DiskCacheIOError(operation: DiskOperation.read.rawValue, path: String(cString: path), errno: code)
            }
            offset += got
            if got == 0 || offset < count { break }
        }
        return offset
    }

    /// Reads exactly `count` bytes from offset 0 into `buffer`; false when the file is shorter.
    func readAll(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, path: UnsafePointer<CChar>)
        throws -> Bool
    {
        if let faults { try faults.check(.read, String(cString: path)) }
        var offset = 0
        while offset < count {
            let got = pread(fd, buffer + offset, count - offset, off_t(offset))
            if got < 0 {
                let code = errno
                if code == EINTR { continue }
                throw DiskCacheIOError(operation: DiskOperation.read.rawValue, path: String(cString: path), errno: code)
            }
            if got == 0 { return false }
            offset += got
        }
        return true
    }

    func sync(_ fd: Int32, path: String) throws {
        try check(.fsync, path)
        if fsync(fd) != 0 { throw failure(.fsync, path) }
    }

    /// Closes `fd`, reporting the deferred write errors some file systems return only here.
    func closeChecked(_ fd: Int32, path: String) throws {
        var injected: (any Error)?
        do { try check(.close, path) } catch { injected = error }
        let result = close(fd)
        if let injected { throw injected }
        if result != 0 && errno != EINTR { throw failure(.close, path) }
    }

    /// Renames `from` over `to` atomically (same directory).
    func move(_ from: String, to: String) throws {
        try check(.rename, to)
        if rename(from, to) != 0 { throw failure(.rename, to) }
    }

    /// Removes `path`; true when it existed.
    @discardableResult
    func remove(_ path: String) throws -> Bool {
        try check(.unlink, path)
        if unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw failure(.unlink, path)
    }

    /// `lstat` of `path`; nil when it does not exist.
    func status(_ path: String) throws -> stat? {
        try check(.stat, path)
        var info = stat()
        if lstat(path, &info) == 0 { return info }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw failure(.stat, path)
    }

    /// The value of extended attribute `name` of an open file, or nil when it has none (or the file system has no
    /// extended attributes). At most `limit` bytes: a larger value is returned as an empty array.
    func extendedAttribute(_ fd: Int32, name: String, limit: Int, path: @autoclosure () -> String) throws -> [UInt8]? {
        if let faults { try faults.check(.getxattr, path()) }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, limit)) { buffer in
            let count = fgetxattr(fd, name, buffer.baseAddress, limit)
            if count >= 0 { return Array(buffer[0..<count]) }
            let code = errno
            if code == ENODATA || code == ENOTSUP || code == EOPNOTSUPP { return nil }
            if code == ERANGE { return [] }
            throw DiskCacheIOError(operation: DiskOperation.getxattr.rawValue, path: path(), errno: code)
        }
    }

    /// Sets (or with nil removes) extended attribute `name` of an open file; removing an absent one is fine.
    func setExtendedAttribute(_ fd: Int32, name: String, value: [UInt8]?, path: @autoclosure () -> String) throws {
        if let faults { try faults.check(.setxattr, path()) }
        let result: Int32
        if let value {
            result = value.withUnsafeBytes { fsetxattr(fd, name, $0.baseAddress, $0.count, 0) }
        } else {
            result = fremovexattr(fd, name)
            if result != 0 && errno == ENODATA { return }
        }
        if result != 0 {
            throw DiskCacheIOError(operation: DiskOperation.setxattr.rawValue, path: path(), errno: errno)
        }
    }

    /// Sets the permission bits of an open file.
    func setMode(_ fd: Int32, _ mode: mode_t, path: @autoclosure () -> String) throws {
        if let faults { try faults.check(.chmod, path()) }
        if fchmod(fd, mode) != 0 {
            throw DiskCacheIOError(operation: DiskOperation.chmod.rawValue, path: path(), errno: errno)
        }
    }

    /// Sets the modification time (the cache's access time) of an open file.
    func setAccessTime(_ fd: Int32, to time: Double) {
        // UTIME_OMIT is a macro Swift does not import: ((1 << 30) - 2) on Linux; it leaves atime alone.
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2), timespec(time)]
        _ = futimens(fd, &times)
    }

    /// Regular files in `directory` (not following links) and the names of everything else; nil when the
    /// directory does not exist. Files that vanish during the walk are skipped.
    func listDirectory(_ directory: String) throws -> (files: [DirectoryItem], others: [String])? {
        try check(.readdir, directory)
        guard let dir = opendir(directory) else {
            if errno == ENOENT { return nil }
            throw failure(.readdir, directory)
        }
        defer { closedir(dir) }
        let dirFD = dirfd(dir)
        var files: [DirectoryItem] = []
        var others: [String] = []
        // `readdir` records are as long as their name (`d_reclen`), not `MemoryLayout<dirent>.size`: loading
        // `entry.pointee` copies a whole `dirent` and reads past the last record of the buffer, which faults when
        // that record ends a page (the soak hit it). Read the name in place instead.
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(dir) {
            let name = String(
                cString: UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self))
            if name == "." || name == ".." { continue }
            var info = stat()
            guard fstatat(dirFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if (info.st_mode & S_IFMT) == S_IFREG {
                files.append(DirectoryItem(name: name, size: Int(info.st_size), accessTime: info.st_mtim.seconds))
            } else {
                others.append(name)
            }
        }
        return (files, others)
    }
}

extension timespec {
    /// The same instant, to the nanosecond.
    func isSame(as other: timespec) -> Bool { tv_sec == other.tv_sec && tv_nsec == other.tv_nsec }

    /// Seconds since 1970 as a Double.
    var seconds: Double { Double(tv_sec) + Double(tv_nsec) / 1e9 }

    /// A timespec for `seconds` since 1970.
    init(_ seconds: Double) {
        let whole = seconds.rounded(.down)
        self.init(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    }
}
