import Foundation
import ImageTestSupport
import Testing

@testable import MemoryCache

/// A fake `/proc/self/cgroup` plus v2 and v1 cgroup trees in a temporary directory.
struct FakeCgroups {
    let root: URL

    init() { root = CacheFixtures.temporaryDirectory("cgroup") }

    var reader: CgroupMemoryLimit {
        CgroupMemoryLimit(
            procSelfCgroup: root.appendingPathComponent("proc-self-cgroup").path,
            unifiedRoot: root.appendingPathComponent("unified").path,
            memoryV1Root: root.appendingPathComponent("memory").path)
    }

    func procSelfCgroup(_ text: String) throws {
        try Data(text.utf8).write(to: root.appendingPathComponent("proc-self-cgroup"))
    }

    /// Writes `value` to `<hierarchy>/<group>/<file>`, creating the directories.
    func set(_ hierarchy: String, _ group: String, _ file: String, _ value: String) throws {
        let directory = root.appendingPathComponent(hierarchy).appendingPathComponent(group, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(value.utf8).write(to: directory.appendingPathComponent(file))
    }

    func v2(_ group: String, _ value: String) throws { try set("unified", group, "memory.max", value) }
    func v1(_ group: String, _ value: String) throws { try set("memory", group, "memory.limit_in_bytes", value) }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

@Suite("MemoryCache sizes itself from its own cgroup")
struct CgroupMemoryLimitTests {
    static let v1Unlimited = "9223372036854771712\n"

    @Test("v2: a systemd service's MemoryMax= is read from its own group, not from the root")
    func systemdService() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/system.slice/thumbs.service\n")
        try fake.v2("", "max\n")
        try fake.v2("system.slice", "max\n")
        try fake.v2("system.slice/thumbs.service", "536870912\n")
        #expect(fake.reader.limit() == 512 << 20)
        #expect(MemoryCacheConfiguration.defaultCostLimit(forMemoryLimit: fake.reader.limit()!) == 512 << 20 / 5)
    }

    @Test("v2: a group that says max takes the limit of the nearest ancestor that sets one")
    func walksUpPastMax() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/user.slice/user-1000.slice/session-3.scope\n")
        try fake.v2("user.slice", "2147483648\n")
        try fake.v2("user.slice/user-1000.slice", "max\n")
        try fake.v2("user.slice/user-1000.slice/session-3.scope", "max\n")
        #expect(fake.reader.limit() == 2 << 30)
    }

    @Test("v2: the smallest limit on the path wins, wherever it is")
    func smallestWins() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/a/b/c\n")
        try fake.v2("a", "1073741824\n")
        try fake.v2("a/b", "268435456\n")
        try fake.v2("a/b/c", "4294967296\n")
        #expect(fake.reader.limit() == 256 << 20)
    }

    @Test("v1: the memory controller's line names the group; huge values mean no limit")
    func v1Nested() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup(
            """
            9:name=systemd:/
            8:pids:/
            4:memory:/process_api/cb62f1de
            1:cpu:/
            0::/

            """)
        try fake.v1("", Self.v1Unlimited)
        try fake.v1("process_api", "1073741824\n")
        try fake.v1("process_api/cb62f1de", Self.v1Unlimited)
        #expect(fake.reader.limit() == 1 << 30)
        // Int64.max (some kernels) is no limit either.
        try fake.v1("process_api", "9223372036854775807\n")
        #expect(fake.reader.limit() == nil)
    }

    @Test("v1: a line listing several controllers with memory among them counts")
    func v1CombinedControllers() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("3:cpu,memory,cpuacct:/batch/job-7\n")
        try fake.v1("batch/job-7", "805306368\n")
        #expect(fake.reader.limit() == 768 << 20)
    }

    @Test("hybrid mode: the unified hierarchy without memory files, the v1 memory controller with a limit")
    func hybrid() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("4:memory:/docker/abc\n0::/docker/abc\n")
        try FileManager.default.createDirectory(
            at: fake.root.appendingPathComponent("unified/docker/abc"), withIntermediateDirectories: true)
        try fake.v1("docker/abc", "134217728\n")
        #expect(fake.reader.limit() == 128 << 20)
    }

    @Test("both hierarchies set a limit: the smaller one")
    func bothHierarchies() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("4:memory:/g\n0::/g\n")
        try fake.v2("g", "300000000\n")
        try fake.v1("g", "200000000\n")
        #expect(fake.reader.limit() == 200_000_000)
    }

    @Test("no level sets a limit: nil, and the process limit is the physical memory")
    func unlimited() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/a/b\n4:memory:/a/b\n")
        try fake.v2("a", "max\n")
        try fake.v2("a/b", "max\n")
        try fake.v1("", Self.v1Unlimited)
        try fake.v1("a/b", Self.v1Unlimited)
        #expect(fake.reader.limit() == nil)
        #expect(SystemMemory.limit(cgroup: fake.reader.limit(), physical: 16 << 30) == 16 << 30)
        #expect(SystemMemory.limit(cgroup: 1 << 30, physical: 16 << 30) == 1 << 30)
        #expect(SystemMemory.limit(cgroup: 64 << 30, physical: 16 << 30) == 16 << 30)
        #expect(SystemMemory.limit(cgroup: 1 << 30, physical: 0) == 1 << 30)
    }

    @Test(
        "unreadable, garbage, empty and zero limit files say nothing; an ancestor's limit still counts",
        arguments: ["garbage\n", "", "0\n", "-5\n", "12abc\n", "99999999999999999999999\n", "max\n"])
    func unreadableLevels(leaf: String) throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/svc/leaf\n")
        try fake.v2("svc", "104857600\n")
        try fake.v2("svc/leaf", leaf)
        #expect(fake.reader.limit() == 100 << 20)
    }

    @Test("a limit file that is a directory (unreadable as a file) is skipped")
    func directoryInPlaceOfFile() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/svc\n")
        try FileManager.default.createDirectory(
            at: fake.root.appendingPathComponent("unified/svc/memory.max"), withIntermediateDirectories: true)
        #expect(fake.reader.limit() == nil)
        try fake.v2("", "104857600\n")
        #expect(fake.reader.limit() == 100 << 20)
    }

    @Test("a group path that does not exist in this mount (a container without cgroupns) falls back to its root")
    func containerWithoutNamespace() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/kubepods/burstable/pod1234/c0ffee\n")
        try fake.v2("", "209715200\n")
        #expect(fake.reader.limit() == 200 << 20)
    }

    @Test("no /proc/self/cgroup: nil; an unparsable one: nil")
    func missingProcFile() throws {
        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.v2("", "104857600\n")
        #expect(fake.reader.limit() == nil)
        try fake.procSelfCgroup("not a cgroup file at all")
        #expect(fake.reader.limit() == nil)
    }

    @Test("paths: a group outside the namespace ('/../x') maps to the root, '(deleted)' is dropped, ':' is kept")
    func pathForms() throws {
        #expect(CgroupMemoryLimit.components(of: "/../../outside") == [])
        #expect(CgroupMemoryLimit.components(of: "/a/./b/../c") == ["a", "c"])
        #expect(CgroupMemoryLimit.components(of: "/gone (deleted)") == ["gone"])
        #expect(CgroupMemoryLimit.components(of: "/") == [])
        let parsed = CgroupMemoryLimit.parseProcCgroup("0::/with:colon/x\n5:memory:/m\n")
        #expect(parsed.unified == ["with:colon", "x"])
        #expect(parsed.memoryV1 == ["m"])

        let fake = FakeCgroups()
        defer { fake.remove() }
        try fake.procSelfCgroup("0::/../../elsewhere\n")
        try fake.v2("", "104857600\n")
        try fake.v2("elsewhere", "52428800\n")
        // "/../../elsewhere" is outside this namespace: not the "elsewhere" below our root, whose limit is not ours.
        #expect(fake.reader.limit() == 100 << 20)
    }

    @Test("on this machine the process limit is positive and at most the physical memory")
    func thisMachine() {
        let limit = MemoryCacheConfiguration.processMemoryLimit
        #expect(limit > 0)
        #expect(limit <= ProcessInfo.processInfo.physicalMemory)
    }
}
