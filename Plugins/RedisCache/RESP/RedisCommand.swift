import Foundation
import NIOCore

/// One Redis command: its name and arguments, each binary-safe.
///
/// Encoded as a RESP array of bulk strings (the only form servers must accept). A value type; `Sendable`.
public struct RedisCommand: Sendable, Hashable, CustomStringConvertible {
    /// The command name and its arguments, in order.
    public var arguments: [ByteBuffer]

    /// Creates a command from text arguments, the first being the name (`["GET", "key"]`).
    public init(_ arguments: [String]) { self.arguments = arguments.map { ByteBuffer(string: $0) } }

    /// Creates a command from a name and binary arguments.
    public init(_ name: String, _ arguments: [ByteBuffer]) {
        self.arguments = [ByteBuffer(string: name)] + arguments
    }

    /// The command name, uppercased (for logs and metrics; never the arguments, which may be secrets).
    public var name: String { arguments.first.map { String(buffer: $0).uppercased() } ?? "" }

    /// The name only: arguments may hold passwords or large payloads.
    public var description: String { "RedisCommand(\(name), \(arguments.count - 1) argument(s))" }

    /// Appends the RESP encoding (`*N\r\n` then `$len\r\n<bytes>\r\n` per argument) to `buffer`.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.reserveCapacity(minimumWritableBytes: encodedLengthEstimate)
        buffer.writeStaticString("*")
        buffer.writeString(String(arguments.count))
        buffer.writeStaticString("\r\n")
        for argument in arguments {
            buffer.writeStaticString("$")
            buffer.writeString(String(argument.readableBytes))
            buffer.writeStaticString("\r\n")
            buffer.writeImmutableBuffer(argument)
            buffer.writeStaticString("\r\n")
        }
    }

    private var encodedLengthEstimate: Int {
        arguments.reduce(16) { $0 + $1.readableBytes + 16 }
    }
}

extension RedisCommand {
    static func get(_ key: String) -> RedisCommand { RedisCommand(["GET", key]) }

    /// `SET key value [PX ms] [NX]`.
    static func set(_ key: String, _ value: ByteBuffer, milliseconds: Int64?, onlyIfAbsent: Bool = false)
        -> RedisCommand
    {
        var arguments = [ByteBuffer(string: key), value]
        if let milliseconds { arguments += [ByteBuffer(string: "PX"), ByteBuffer(string: String(milliseconds))] }
        if onlyIfAbsent { arguments.append(ByteBuffer(string: "NX")) }
        return RedisCommand("SET", arguments)
    }

    static func del(_ keys: [String]) -> RedisCommand { RedisCommand(["DEL"] + keys) }

    /// `STRLEN key`: the entry's length, 0 when absent.
    static func strlen(_ key: String) -> RedisCommand { RedisCommand(["STRLEN", key]) }

    /// `GETRANGE key 0 limit-1`: at most `limit` bytes of the entry, so no reply exceeds what the reader accepts.
    static func getPrefix(_ key: String, limit: Int) -> RedisCommand {
        RedisCommand(["GETRANGE", key, "0", String(max(0, limit - 1))])
    }

    /// `EVAL script 1 key args…`.
    static func eval(_ script: String, key: String, _ arguments: [String]) -> RedisCommand {
        RedisCommand(["EVAL", script, "1", key] + arguments)
    }
}
