import NIOCore

/// Why bytes are not RESP: the kind of fault and where it was found.
public struct RESPDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of fault.
    public enum Kind: String, Sendable, Hashable {
        /// A type byte that is not one of RESP2's or RESP3's.
        case unknownType
        /// A length or integer that is not a decimal number, or does not fit.
        case badNumber
        /// A line or a bulk payload not terminated by CRLF.
        case missingCRLF
        /// A length beyond ``RESPDecoder/Limits``.
        case tooLarge
        /// Aggregates nested deeper than ``RESPDecoder/Limits/maxDepth``.
        case tooDeep
        /// A malformed value (a boolean that is not `t`/`f`, a verbatim string without its format prefix …).
        case malformed
    }

    /// The fault.
    public let kind: Kind
    /// Offset from the start of the value being decoded.
    public let offset: Int

    /// "RESP kind at offset N".
    public var description: String { "RESP \(kind.rawValue) at offset \(offset)" }
}

/// A pure, incremental RESP2/RESP3 decoder: feed it the received bytes, take whole values out.
///
/// `decode(_:)` either consumes exactly one complete value from the front of the buffer, or consumes nothing and
/// returns nil when more bytes are needed, so it can be called again after each read. Lengths, element counts
/// and nesting are bounded by ``Limits`` *before* anything is allocated, and no input makes it trap: malformed
/// bytes throw ``RESPDecodingError``. It keeps no state between calls (a partial value is re-read from the
/// start when more bytes arrive, which costs little because bulk payloads are checked by length, not scanned).
///
/// Threading: a value type with no shared state; use one per connection.
public struct RESPDecoder: Sendable {
    /// Bounds that make hostile or broken peers fail fast instead of exhausting memory.
    public struct Limits: Sendable, Hashable {
        /// The longest bulk string or blob, in bytes (default 512 MiB, Redis's own `proto-max-bulk-len`).
        public var maxBulkLength: Int
        /// The most elements of one aggregate (default 1,048,576).
        public var maxElements: Int
        /// The deepest nesting of aggregates (default 32).
        public var maxDepth: Int
        /// The longest simple line (status, error, number), in bytes (default 64 KiB).
        public var maxLineLength: Int

        /// Creates limits.
        public init(
            maxBulkLength: Int = 512 << 20, maxElements: Int = 1 << 20, maxDepth: Int = 32,
            maxLineLength: Int = 64 << 10
        ) {
            self.maxBulkLength = maxBulkLength
            self.maxElements = maxElements
            self.maxDepth = maxDepth
            self.maxLineLength = maxLineLength
        }
    }

    /// The bounds in force.
    public var limits: Limits

    /// Creates a decoder.
    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Takes one complete value off the front of `buffer`, or returns nil (consuming nothing) if it is incomplete.
    ///
    /// - Throws: ``RESPDecodingError`` for bytes that are not RESP or exceed the limits; the buffer is then left
    ///   as it was and the connection should be closed.
    public func decode(_ buffer: inout ByteBuffer) throws(RESPDecodingError) -> RESPValue? {
        var reader = Reader(buffer: buffer, start: buffer.readerIndex, limits: limits)
        guard let value = try reader.value(depth: 0) else { return nil }
        buffer.moveReaderIndex(to: reader.index)
        return value
    }

    /// Decodes every complete value in `bytes` (for tests and fuzzing): the values, and how many bytes remain.
    public func decodeAll(_ bytes: [UInt8]) throws(RESPDecodingError) -> (values: [RESPValue], remaining: Int) {
        var buffer = ByteBuffer(bytes: bytes)
        var values: [RESPValue] = []
        while let value = try decode(&buffer) { values.append(value) }
        return (values, buffer.readableBytes)
    }
}

/// Reads one value at `index` without moving the buffer; nil when the bytes end first.
private struct Reader {
    let buffer: ByteBuffer
    let start: Int
    let limits: RESPDecoder.Limits
    var index: Int

    init(buffer: ByteBuffer, start: Int, limits: RESPDecoder.Limits) {
        self.buffer = buffer
        self.start = start
        self.limits = limits
        self.index = start
    }

    private var end: Int { buffer.writerIndex }

    private func fail(_ kind: RESPDecodingError.Kind) -> RESPDecodingError {
        RESPDecodingError(kind: kind, offset: index - start)
    }

    mutating func value(depth: Int) throws(RESPDecodingError) -> RESPValue? {
        guard depth <= limits.maxDepth else { throw fail(.tooDeep) }
        guard index < end, let type = buffer.getInteger(at: index, as: UInt8.self) else { return nil }
        index += 1
        switch type {
        case UInt8(ascii: "+"):
            return try line().map { .simpleString($0) }
        case UInt8(ascii: "-"):
            return try line().map { .error($0) }
        case UInt8(ascii: ":"):
            guard let text = try line() else { return nil }
            guard let number = Int64(text) else { throw fail(.badNumber) }
            return .integer(number)
        case UInt8(ascii: "$"):
            guard let result = try blob(nullable: true) else { return nil }
            return result.map { RESPValue.bulkString($0) } ?? RESPValue.null
        case UInt8(ascii: "!"):
            guard let result = try blob(nullable: false) else { return nil }
            return RESPValue.error(String(buffer: result ?? ByteBuffer()))
        case UInt8(ascii: "="):
            guard let result = try blob(nullable: false), var payload = result else { return nil }
            // "txt:" or "mkd:" then the text.
            guard payload.readableBytes >= 4, payload.getInteger(at: payload.readerIndex + 3, as: UInt8.self) == 58
            else { throw fail(.malformed) }
            payload.moveReaderIndex(forwardBy: 4)
            return .bulkString(payload)
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"):
            guard let count = try length(allowNull: type == UInt8(ascii: "*")) else { return nil }
            guard count >= 0 else { return .null }
            guard let items = try elements(count, depth: depth) else { return nil }
            return type == UInt8(ascii: "*") ? .array(items) : type == UInt8(ascii: "~") ? .set(items) : .push(items)
        case UInt8(ascii: "%"), UInt8(ascii: "|"):
            guard let count = try length(allowNull: false) else { return nil }
            guard count <= limits.maxElements / 2 else { throw fail(.tooLarge) }
            guard let items = try elements(count * 2, depth: depth) else { return nil }
            if type == UInt8(ascii: "|") {
                // An attribute describes the next value; drop it and return that value (a chain of attributes
                // counts as nesting, so it cannot recurse without bound).
                return try value(depth: depth + 1)
            }
            return .map(stride(from: 0, to: items.count, by: 2).map { RESPPair(key: items[$0], value: items[$0 + 1]) })
        case UInt8(ascii: "_"):
            guard let text = try line() else { return nil }
            guard text.isEmpty else { throw fail(.malformed) }
            return .null
        case UInt8(ascii: "#"):
            guard let text = try line() else { return nil }
            switch text {
            case "t": return .boolean(true)
            case "f": return .boolean(false)
            default: throw fail(.malformed)
            }
        case UInt8(ascii: ","):
            guard let text = try line() else { return nil }
            switch text.lowercased() {
            case "inf", "+inf": return .double(.infinity)
            case "-inf": return .double(-.infinity)
            case "nan": return .double(.nan)
            default:
                guard let number = Double(text), !text.isEmpty else { throw fail(.badNumber) }
                return .double(number)
            }
        case UInt8(ascii: "("):
            guard let text = try line() else { return nil }
            let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { throw fail(.badNumber) }
            return .bigNumber(text)
        default:
            index -= 1
            throw fail(.unknownType)
        }
    }

    private mutating func elements(_ count: Int, depth: Int) throws(RESPDecodingError) -> [RESPValue]? {
        guard depth < limits.maxDepth else { throw fail(.tooDeep) }
        guard count <= limits.maxElements else { throw fail(.tooLarge) }
        // Reserve no more than the bytes present could describe (each element takes at least 3 bytes).
        var items: [RESPValue] = []
        items.reserveCapacity(min(count, max(0, end - index) / 3))
        for _ in 0..<count {
            guard let item = try value(depth: depth + 1) else { return nil }
            items.append(item)
        }
        return items
    }

    /// `len\r\n` then `len` bytes and `\r\n`; `.some(nil)` for RESP2's `$-1`.
    private mutating func blob(nullable: Bool) throws(RESPDecodingError) -> ByteBuffer?? {
        guard let count = try length(allowNull: nullable) else { return nil }
        guard count >= 0 else { return .some(nil) }
        guard count <= limits.maxBulkLength else { throw fail(.tooLarge) }
        guard end - index >= count + 2 else { return nil }
        guard buffer.getInteger(at: index + count, as: UInt8.self) == 13,
            buffer.getInteger(at: index + count + 1, as: UInt8.self) == 10
        else {
            index += count
            throw fail(.missingCRLF)
        }
        let payload = buffer.getSlice(at: index, length: count) ?? ByteBuffer()
        index += count + 2
        return .some(payload)
    }

    /// A decimal length line; -1 only when `allowNull` (RESP2's null bulk string / array).
    private mutating func length(allowNull: Bool) throws(RESPDecodingError) -> Int? {
        guard let text = try line() else { return nil }
        guard text.utf8.count <= 20, let value = Int(text) else { throw fail(.badNumber) }
        if value == -1 && allowNull { return -1 }
        guard value >= 0 else { throw fail(.badNumber) }
        return value
    }

    /// The text up to the next CRLF (which is consumed); nil when no CRLF arrived yet.
    private mutating func line() throws(RESPDecodingError) -> String? {
        var cursor = index
        let limit = min(end, index + limits.maxLineLength + 1)
        while cursor < limit {
            guard let byte = buffer.getInteger(at: cursor, as: UInt8.self) else { return nil }
            if byte == 13 {
                guard cursor + 1 < end else { return nil }
                guard buffer.getInteger(at: cursor + 1, as: UInt8.self) == 10 else {
                    index = cursor
                    throw fail(.missingCRLF)
                }
                let text = buffer.getString(at: index, length: cursor - index) ?? ""
                index = cursor + 2
                return text
            }
            if byte == 10 {
                index = cursor
                throw fail(.missingCRLF)
            }
            cursor += 1
        }
        if cursor - index > limits.maxLineLength { throw fail(.tooLarge) }
        return nil
    }
}
