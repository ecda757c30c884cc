#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The memory limit of this process's own control group, read the way the kernel applies it.
///
/// `/proc/self/cgroup` names the group of the process in each hierarchy: `0::/path` for the unified (v2)
/// hierarchy, `N:…memory…:/path` for the v1 memory controller. The limit of a group is the smallest limit of the
/// group and its ancestors, so every level from the group up to the root of the mount is read: `memory.max`
/// under the v2 root, `memory.limit_in_bytes` under the v1 memory root. `max` (v2), the huge page-rounded values
/// of v1 (anything from 2^62 up) and levels that are missing or unreadable say nothing; the smallest number
/// found wins. A group directory that does not exist in this mount namespace (a container that sees its own
/// group as the root, without a cgroup namespace) is skipped, so its ancestors, down to the mount's root, are
/// still read.
///
/// A service under systemd with `MemoryMax=` (v2) or `MemoryLimit=` (v1) is thus sized from that limit, and a
/// container from its own limit.
///
/// The roots are injectable so tests build fake trees in a temporary directory. Stateless and thread-safe;
/// every call reads the files again (a few small reads: not for a hot path).
struct CgroupMemoryLimit: Sendable {
    /// The file listing this process's groups.
    var procSelfCgroup = "/proc/self/cgroup"
    /// Mount point of the unified (v2) hierarchy.
    var unifiedRoot = "/sys/fs/cgroup"
    /// Mount point of the v1 memory controller's hierarchy.
    var memoryV1Root = "/sys/fs/cgroup/memory"

    /// v1 reports "no limit" as `PAGE_COUNTER_MAX` rounded to pages (9223372036854771712 on 4 KiB pages) or
    /// `Int64.max`; anything this large is no limit.
    static let unlimitedThreshold: UInt64 = 1 << 62

    /// The limit in bytes, or nil when no level of either hierarchy sets one.
    func limit() -> UInt64? {
        guard let text = Self.readSmallFile(procSelfCgroup) else { return nil }
        let groups = Self.parseProcCgroup(text)
        var best: UInt64?
        func consider(_ value: UInt64?) {
            guard let value else { return }
            best = best.map { min($0, value) } ?? value
        }
        if let path = groups.unified {
            consider(smallestLimit(root: unifiedRoot, path: path, file: "memory.max"))
        }
        if let path = groups.memoryV1 {
            consider(smallestLimit(root: memoryV1Root, path: path, file: "memory.limit_in_bytes"))
        }
        return best
    }

    /// The groups named by a `/proc/self/cgroup` text: the unified one (`0::/path`) and the v1 memory one.
    static func parseProcCgroup(_ text: String) -> (unified: [String]?, memoryV1: [String]?) {
        var unified: [String]?
        var memoryV1: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            // hierarchy-ID:controller-list:cgroup-path; the path itself may contain ':'.
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let controllers = fields[1].split(separator: ",")
            if fields[0] == "0" && fields[1].isEmpty {
                unified = components(of: fields[2])
            } else if controllers.contains("memory") {
                memoryV1 = components(of: fields[2])
            }
        }
        return (unified, memoryV1)
    }

    /// The path's components below the root. A group outside this cgroup namespace is shown as `/../x`; it is
    /// not in this mount, and the nearest group we can see on its way up is the namespace's root: `[]`.
    static func components(of path: Substring) -> [String] {
        var trimmed = path
        // v1 marks a group removed while the process was in it.
        if trimmed.hasSuffix(" (deleted)") { trimmed = trimmed.dropLast(" (deleted)".count) }
        var result: [String] = []
        for part in trimmed.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                guard !result.isEmpty else { return [] }
                result.removeLast()
            default: result.append(String(part))
            }
        }
        return result
    }

    /// The smallest limit set on the group at `path` or any ancestor, up to and including `root`.
    func smallestLimit(root: String, path: [String], file: String) -> UInt64? {
        var best: UInt64?
        var depth = path.count
        while depth >= 0 {
            let directory = ([root] + path.prefix(depth)).joined(separator: "/")
            if let value = Self.readSmallFile(directory + "/" + file).flatMap(Self.parseLimit) {
                best = best.map { min($0, value) } ?? value
            }
            depth -= 1
        }
        return best
    }

    /// A limit file's value: a positive byte count below the "unlimited" threshold, else nil (`max`, garbage,
    /// 0, empty).
    static func parseLimit(_ text: String) -> UInt64? {
        let trimmed = text.split(whereSeparator: { $0 == "\n" || $0 == " " || $0 == "\t" }).first ?? ""
        guard let value = UInt64(trimmed), value > 0, value < unlimitedThreshold else { return nil }
        return value
    }

    /// The text of a small file (at most 64 KiB), or nil when it is missing, unreadable, not a regular
    /// readable file, or larger.
    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let capacity = 64 * 1024
        var bytes = [UInt8](repeating: 0, count: capacity)
        var count = 0
        let complete = bytes.withUnsafeMutableBytes { buffer -> Bool in
            // proc and cgroup files report size 0: read until end of file.
            while count < capacity {
                let got = read(fd, buffer.baseAddress! + count, capacity - count)
                if got < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                if got == 0 { return true }
                count += got
            }
            return false
        }
        guard complete else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }
}
