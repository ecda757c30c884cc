import NIOCore

/// One value of the Redis serialization protocol, RESP2 or RESP3.
///
/// RESP3's verbatim strings arrive as ``bulkString(_:)`` (the `txt:` prefix removed), blob errors as
/// ``error(_:)``, and attributes are read and dropped by the decoder (they annotate the value that follows).
/// A value is immutable and `Sendable`; bulk strings share the received buffer's storage rather than copying it.
public enum RESPValue: Sendable, Hashable {
    /// `+OK`: a short status text.
    case simpleString(String)
    /// `-ERR …` (and RESP3's `!` blob error): the server refused the command.
    case error(String)
    /// `:42`.
    case integer(Int64)
    /// `$5 hello` (and RESP3's `=` verbatim string): binary-safe bytes.
    case bulkString(ByteBuffer)
    /// RESP2's null bulk string or null array, RESP3's `_`.
    case null
    /// `*2 …`: an ordered list.
    case array([RESPValue])
    /// RESP3's `,3.14`.
    case double(Double)
    /// RESP3's `#t` / `#f`.
    case boolean(Bool)
    /// RESP3's `(` big number, as its decimal text.
    case bigNumber(String)
    /// RESP3's `%` map, as key-value pairs in the order received.
    case map([RESPPair])
    /// RESP3's `~` set, in the order received.
    case set([RESPValue])
    /// RESP3's `>` out-of-band push (pub/sub messages, invalidations); never the reply to a command.
    case push([RESPValue])

    /// The bytes of a bulk or simple string, nil for other values.
    public var bytes: ByteBuffer? {
        switch self {
        case .bulkString(let buffer): buffer
        case .simpleString(let text): ByteBuffer(string: text)
        default: nil
        }
    }

    /// The value as text: bulk and simple strings (UTF-8), integers, big numbers; nil otherwise.
    public var string: String? {
        switch self {
        case .bulkString(let buffer): String(buffer: buffer)
        case .simpleString(let text), .bigNumber(let text): text
        case .integer(let value): String(value)
        default: nil
        }
    }

    /// The value as an integer: integers and decimal strings; nil otherwise.
    public var int: Int64? {
        switch self {
        case .integer(let value): value
        case .bulkString, .simpleString, .bigNumber: string.flatMap { Int64($0) }
        default: nil
        }
    }

    /// The elements of an array, set or push; a map's keys and values interleaved; nil otherwise.
    public var elements: [RESPValue]? {
        switch self {
        case .array(let values), .set(let values), .push(let values): values
        case .map(let pairs): pairs.flatMap { [$0.key, $0.value] }
        default: nil
        }
    }

    /// True for ``null``.
    public var isNull: Bool { self == .null }
}

/// One entry of a RESP3 map.
public struct RESPPair: Sendable, Hashable {
    /// The key.
    public var key: RESPValue
    /// The value.
    public var value: RESPValue

    /// Creates a pair.
    public init(key: RESPValue, value: RESPValue) {
        self.key = key
        self.value = value
    }
}
