import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Ports for servers a test starts as another process (redis-server, nginx), which bind after the test chose.
///
/// A port the kernel hands out for a bind to port 0 comes from its ephemeral range, the range outgoing connections
/// take their local ports from: between the probe and the server's own bind, a connection of a test running beside
/// it may take the port ("Address already in use", a restart on the same port alike). This picks from below that
/// range (read from `/proc/sys/net/ipv4/ip_local_port_range`), where no connection's local port ever lands, and checks
/// that nothing listens there now. Thread-safe.
public enum TestPorts {
    /// A port on 127.0.0.1 that nothing is bound to and no outgoing connection will take.
    public static func free() throws -> Int {
        let low = max(10_000, ephemeralRange.lowerBound - 12_000)
        let high = ephemeralRange.lowerBound - 1
        for _ in 0..<200 {
            let port = Int.random(in: low...high)
            if canBind(port) { return port }
        }
        throw PortError(description: "no free port in \(low)...\(high) after 200 tries")
    }

    /// The error when no port could be found.
    public struct PortError: Error, CustomStringConvertible {
        /// What was tried.
        public let description: String
    }

    /// The kernel's ephemeral port range (Linux's default when it cannot be read).
    static let ephemeralRange: ClosedRange<Int> = {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        guard bounds.count == 2, bounds[0] > 12_000, bounds[0] <= bounds[1] else { return 32_768...60_999 }
        return bounds[0]...bounds[1]
    }()

    private static func canBind(_ port: Int) -> Bool {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return bound == 0
    }
}
