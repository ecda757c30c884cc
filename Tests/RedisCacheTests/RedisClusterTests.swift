import Foundation
import ImageCore
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import RedisCache

/// A real 3-primary Redis Cluster (`redis-server --cluster-enabled yes` + `redis-cli --cluster create`): routing
/// by slot, and a slot migration in the middle of a run (ASK while it moves, MOVED after).
@Suite(.enabled(if: RedisTestEnvironment.shouldRun, "redis-server not installed (apt-get install redis-server)"))
struct RedisClusterTests {
    static func client(_ cluster: RedisClusterFixture) -> RedisClusterClient {
        var options = RedisConnectionOptions()
        options.commandTimeout = .seconds(10)
        options.connectTimeout = .seconds(10)
        let configured = options
        return RedisClusterClient(
            seeds: [cluster.nodes[1].endpoint], usesTLS: false, minimumRefreshInterval: 0,
            clock: RedisCache.monotonicSeconds
        ) { endpoint in
            RedisConnectionPool(
                endpoint: endpoint, options: configured, capacity: 2, backoff: Backoff(base: 0.01, maximum: 0.05),
                group: MultiThreadedEventLoopGroup.singleton, clock: RedisCache.monotonicSeconds)
        }
    }

    @Test func routesBySlotAndFollowsASlotMigrationDuringARun() async throws {
        let cluster = try await RedisClusterFixture.start()
        defer { cluster.destroy() }
        let client = Self.client(cluster)
        defer { client.shutdown() }

        // Keys spread over every node, written and read through the client.
        for index in 0..<60 {
            let replies = try await client.send(
                [.set("spread-\(index)", ByteBuffer(string: "v\(index)"), milliseconds: nil), .get("spread-\(index)")],
                routingKey: "spread-\(index)")
            #expect(replies[1].string == "v\(index)")
        }
        let map = try #require(client.currentMap)
        #expect(map.unassignedCount == 0 && map.primaries.count == 3)
        for node in cluster.nodes {
            let size = Int(try await node.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(size > 0, "node \(node.port) got no keys: routing is not by slot")
        }

        // The keys that move: one hash tag, one slot.
        let moving = (0..<20).map { "{migrating}-\($0)" }
        let slot = HashSlot.slot(forKey: "migrating")
        for key in moving {
            _ = try await client.send([.set(key, ByteBuffer(string: key), milliseconds: nil)], routingKey: key)
        }
        let source = try await cluster.owner(ofSlot: slot)
        let target = try #require(cluster.nodes.first { $0.port != source.port })
        let sourceID = try await cluster.nodeID(source)
        let targetID = try await cluster.nodeID(target)

        // A run of reads and writes over every key goes on while the slot moves; none may fail or read wrong.
        let stop = Atomic<Bool>(false)
        let background = Task { () -> (operations: Int, failures: [String]) in
            var operations = 0
            var failures: [String] = []
            while !stop.load(ordering: .relaxed) {
                for key in moving + (0..<60).map({ "spread-\($0)" }) {
                    do {
                        let reply = try await client.send([.get(key)], routingKey: key)
                        let expected = key.hasPrefix("spread-") ? "v\(key.dropFirst(7))" : key
                        if reply.first?.string != expected { failures.append("\(key): \(reply)") }
                    } catch {
                        failures.append("\(key): \(error)")
                    }
                    operations += 1
                }
            }
            return (operations, failures)
        }

        _ = try await target.cli(["CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID])
        _ = try await source.cli(["CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID])
        // Half the keys move: those now answer ASK from the source, the rest are still served there.
        let migrate = try await source.cli(
            ["MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS"] + Array(moving.prefix(10)))
        #expect(migrate.contains("OK"))
        for key in moving {
            let reply = try await client.send([.get(key)], routingKey: key)
            #expect(reply.first?.string == key, "during the migration \(key) read \(reply)")
        }
        // A new key in the migrating slot goes to the target (ASK), and is readable there.
        _ = try await client.send(
            [.set("{migrating}-new", ByteBuffer(string: "n"), milliseconds: nil)], routingKey: "{migrating}-new")
        _ = try await source.cli(
            ["MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS"] + Array(moving.dropFirst(10)))
        // No MOVED so far (ASK does not re-read the map): count the reads from here.
        let refreshesBefore = client.refreshCount
        // Target first, then source, then the rest, as the Redis Cluster documentation orders it.
        for node in [target, source] + cluster.nodes.filter({ $0.port != target.port && $0.port != source.port }) {
            _ = try await node.cli(["CLUSTER", "SETSLOT", String(slot), "NODE", targetID])
        }
        // After the move the source answers MOVED; the client updates its map and reads from the target.
        for key in moving {
            let reply = try await client.send([.get(key)], routingKey: key)
            #expect(reply.first?.string == key)
        }
        #expect(try await client.send([.get("{migrating}-new")], routingKey: "{migrating}-new").first?.string == "n")
        #expect(client.currentMap?.endpoint(forSlot: slot) == target.endpoint)
        for _ in 0..<200 where client.refreshCount == refreshesBefore {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(client.refreshCount > refreshesBefore, "MOVED must trigger a re-read of the slot map")

        stop.store(true, ordering: .relaxed)
        let run = await background.value
        #expect(run.failures.isEmpty, "\(run.failures.prefix(5))")
        #expect(run.operations > 0)
        let onTarget = try await target.cli(["CLUSTER", "COUNTKEYSINSLOT", String(slot)])
        #expect(onTarget.trimmingCharacters(in: .whitespacesAndNewlines) == "21")
    }

    /// The cache level over the cluster: entries and leases land in the right slots on every node.
    @Test func cacheOverTheCluster() async throws {
        let cluster = try await RedisClusterFixture.start()
        defer { cluster.destroy() }
        var configuration = try RedisCacheConfiguration(urlList: cluster.seedURLs.joined(separator: ","))
        configuration.commandTimeout = 10
        configuration.connectTimeout = 10
        configuration.fleetCoalescing = .init()
        guard case .cluster(let seeds) = configuration.topology else {
            Issue.record("a list of URLs is a cluster")
            return
        }
        #expect(seeds.count == 3)
        let cache = RedisCache(configuration: configuration)
        defer { cache.shutdown() }
        for index in 0..<40 {
            try await cache.store(
                nil, data: Data("bytes-\(index)".utf8), forKey: "https://h/\(index).png", cacheType: .disk)
        }
        for index in 0..<40 {
            let hit = try #require(try await cache.queryImage(forKey: "https://h/\(index).png"))
            #expect(hit.data == Data("bytes-\(index)".utf8))
        }
        #expect(try await cache.queryImage(forKey: "https://h/missing.png") == nil)
        await cache.clear()
        for node in cluster.nodes {
            let left = try await node.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)
            // The miss above left one lease (coalescing is on); clear removed it too.
            #expect(left == "0", "node \(node.port) still has \(left) keys")
        }
        #expect(cache.isAvailable)
    }
}
