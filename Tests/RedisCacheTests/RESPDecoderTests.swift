import NIOCore
import Testing

@testable import RedisCache

/// The RESP2/RESP3 decoder and the command encoder, on bytes written by hand from the protocol specification.
@Suite struct RESPDecoderTests {
    let decoder = RESPDecoder()

    func decode(_ text: String) throws -> [RESPValue] {
        let (values, remaining) = try decoder.decodeAll(Array(text.utf8))
        #expect(remaining == 0, "left \(remaining) bytes of \(text.debugDescription)")
        return values
    }

    func bulk(_ text: String) -> RESPValue { .bulkString(ByteBuffer(string: text)) }

    @Test func resp2Types() throws {
        #expect(try decode("+OK\r\n") == [.simpleString("OK")])
        #expect(try decode("-ERR unknown command 'FOO'\r\n") == [.error("ERR unknown command 'FOO'")])
        #expect(try decode(":-42\r\n") == [.integer(-42)])
        #expect(try decode("$5\r\nhello\r\n") == [bulk("hello")])
        #expect(try decode("$0\r\n\r\n") == [bulk("")])
        #expect(try decode("$-1\r\n") == [.null])
        #expect(try decode("*-1\r\n") == [.null])
        #expect(try decode("*0\r\n") == [.array([])])
        #expect(
            try decode("*3\r\n:1\r\n$3\r\nfoo\r\n*1\r\n+x\r\n")
                == [.array([.integer(1), bulk("foo"), .array([.simpleString("x")])])])
        // Binary-safe: CRLF inside a bulk string is data.
        #expect(try decode("$4\r\na\r\nb\r\n") == [bulk("a\r\nb")])
    }

    @Test func resp3Types() throws {
        #expect(try decode("_\r\n") == [.null])
        #expect(try decode("#t\r\n#f\r\n") == [.boolean(true), .boolean(false)])
        #expect(try decode(",3.25\r\n") == [.double(3.25)])
        #expect(try decode(",-inf\r\n") == [.double(-.infinity)])
        #expect(
            try decode("(3492890328409238509324850943850943825024385\r\n") == [
                .bigNumber("3492890328409238509324850943850943825024385")
            ])
        #expect(try decode("!21\r\nSYNTAX invalid syntax\r\n") == [.error("SYNTAX invalid syntax")])
        #expect(try decode("=15\r\ntxt:Some string\r\n") == [bulk("Some string")])
        #expect(
            try decode("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n") == [
                .map([
                    RESPPair(key: .simpleString("first"), value: .integer(1)),
                    RESPPair(key: .simpleString("second"), value: .integer(2)),
                ])
            ])
        #expect(try decode("~2\r\n+a\r\n+b\r\n") == [.set([.simpleString("a"), .simpleString("b")])])
        #expect(
            try decode(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n") == [
                .push([bulk("message"), bulk("ch"), bulk("hi")])
            ])
        // An attribute annotates the next value and is dropped.
        #expect(
            try decode("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:7\r\n") == [.array([.integer(7)])])
    }

    /// Fed one byte at a time, every value comes out whole, exactly once, and nothing is consumed early.
    @Test func incremental() throws {
        let text = "*2\r\n$5\r\nhello\r\n%1\r\n+k\r\n,1.5\r\n:7\r\n$3\r\nend\r\n"
        var buffer = ByteBuffer()
        var values: [RESPValue] = []
        for byte in text.utf8 {
            buffer.writeInteger(byte)
            while let value = try decoder.decode(&buffer) { values.append(value) }
        }
        #expect(values == (try decode(text)))
        #expect(values.count == 3)
        #expect(buffer.readableBytes == 0)
    }

    @Test func incompleteInputConsumesNothing() throws {
        for prefix in ["", "$", "$5", "$5\r", "$5\r\nhel", "$5\r\nhello", "$5\r\nhello\r", "*2\r\n:1\r\n", "#"] {
            var buffer = ByteBuffer(string: prefix)
            #expect(try decoder.decode(&buffer) == nil, "\(prefix.debugDescription)")
            #expect(buffer.readableBytes == prefix.utf8.count)
        }
    }

    @Test(arguments: [
        ("?x\r\n", RESPDecodingError.Kind.unknownType),
        (":12a\r\n", .badNumber),
        (":99999999999999999999999\r\n", .badNumber),
        ("$-2\r\n", .badNumber),
        ("*-5\r\n", .badNumber),
        ("$3\r\nabcd\r\n", .missingCRLF),
        ("+OK\n", .missingCRLF),
        ("+OK\rX", .missingCRLF),
        ("#x\r\n", .malformed),
        ("_x\r\n", .malformed),
        ("=3\r\nabc\r\n", .malformed),
        (",abc\r\n", .badNumber),
        ("(12x\r\n", .badNumber),
        ("$600000000\r\n", .tooLarge),
        ("*2000000\r\n", .tooLarge),
    ])
    func malformedInputThrows(input: String, kind: RESPDecodingError.Kind) {
        #expect(throws: RESPDecodingError.self) { try decoder.decodeAll(Array(input.utf8)) }
        do {
            _ = try decoder.decodeAll(Array(input.utf8))
        } catch {
            #expect(error.kind == kind, "\(input.debugDescription): \(error)")
        }
    }

    @Test func nestingAndLineLengthAreBounded() {
        let deep = String(repeating: "*1\r\n", count: 40) + ":1\r\n"
        #expect(throws: RESPDecodingError(kind: .tooDeep, offset: 4 * 33)) { try decoder.decodeAll(Array(deep.utf8)) }
        let attributes = String(repeating: "|0\r\n", count: 40) + ":1\r\n"
        #expect(throws: RESPDecodingError.self) { try decoder.decodeAll(Array(attributes.utf8)) }
        let small = RESPDecoder(limits: .init(maxLineLength: 8))
        #expect(throws: RESPDecodingError.self) { try small.decodeAll(Array("+0123456789\r\n".utf8)) }
        // A long line with no CRLF yet is refused as soon as it passes the limit, not buffered forever.
        var buffer = ByteBuffer(string: "+" + String(repeating: "a", count: 20))
        #expect(throws: RESPDecodingError.self) { try small.decode(&buffer) }
    }

    /// Random bytes and random cuts of valid streams never trap; they decode, ask for more, or throw.
    @Test func randomBytesNeverTrap() {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("+-:$*_#,(!=%~>|\r\n0123456789-abc".utf8)
        for _ in 0..<3000 {
            let length = Int.random(in: 0..<64, using: &random)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            _ = try? decoder.decodeAll(bytes)
        }
    }

    @Test func commandEncoding() {
        var buffer = ByteBuffer()
        RedisCommand(["SET", "key", "a\r\nb"]).encode(into: &buffer)
        #expect(String(buffer: buffer) == "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$4\r\na\r\nb\r\n")
        var empty = ByteBuffer()
        RedisCommand(["GET", ""]).encode(into: &empty)
        #expect(String(buffer: empty) == "*2\r\n$3\r\nGET\r\n$0\r\n\r\n")
        // What the encoder writes, the decoder reads back.
        #expect(
            (try? decoder.decodeAll(Array(buffer.readableBytesView)).values) == [
                .array([bulk("SET"), bulk("key"), bulk("a\r\nb")])
            ])
        let set = RedisCommand.set("k", ByteBuffer(string: "v"), milliseconds: 1500, onlyIfAbsent: true)
        #expect(set.arguments.map { String(buffer: $0) } == ["SET", "k", "v", "PX", "1500", "NX"])
        #expect(set.name == "SET")
        #expect(!RedisCommand(["AUTH", "user", "secret"]).description.contains("secret"))
    }
}
