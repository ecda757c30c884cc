import NIOCore
import Testing

@testable import RedisCache

/// The connection's pure state machine: handshake variants, pipelining, failures — no sockets.
@Suite struct ConnectionStateMachineTests {
    typealias Machine = RedisConnectionStateMachine

    func args(_ action: Machine.Action) -> [String]? {
        guard case .writeHandshake(let command) = action else { return nil }
        return command.arguments.map { String(buffer: $0) }
    }

    @Test func resp3HelloCarriesAuthAndName() {
        var machine = Machine(
            handshake: .init(username: "alice", password: "pw", database: 0, preferRESP3: true, clientName: "app"))
        // Commands submitted before the connection is up wait.
        #expect(machine.enqueue(1) == .none)
        #expect(args(machine.channelActive()) == ["HELLO", "3", "AUTH", "alice", "pw", "SETNAME", "app"])
        #expect(machine.enqueue(2) == .none)
        #expect(machine.pendingCount == 2)
        let reply = RESPValue.map([RESPPair(key: .bulkString(ByteBuffer(string: "proto")), value: .integer(3))])
        #expect(machine.received(reply) == .ready(protocolVersion: 3, write: [1, 2]))
        #expect(machine.protocolVersion == 3)
        #expect(machine.received(.simpleString("a")) == .succeed(1, .simpleString("a")))
        #expect(machine.received(.simpleString("b")) == .succeed(2, .simpleString("b")))
    }

    @Test func noHelloFallsBackToAuthInRESP2ThenSelects() {
        var machine = Machine(handshake: .init(password: "pw", database: 4, preferRESP3: true))
        #expect(args(machine.channelActive()) == ["HELLO", "3", "AUTH", "default", "pw"])
        // Redis 5 has no HELLO.
        #expect(
            args(machine.received(.error("ERR unknown command 'HELLO', with args beginning with: '3'"))) == [
                "AUTH", "pw",
            ])
        #expect(args(machine.received(.simpleString("OK"))) == ["SELECT", "4"])
        #expect(machine.received(.simpleString("OK")) == .ready(protocolVersion: 2, write: []))
        #expect(machine.protocolVersion == 2)
    }

    @Test func noprotoKeepsRESP2() {
        var machine = Machine(handshake: .init(preferRESP3: true))
        _ = machine.channelActive()
        #expect(
            machine.received(.error("NOPROTO sorry, this protocol version is not supported"))
                == .ready(protocolVersion: 2, write: []))
    }

    @Test func plainConnectionIsReadyAtOnce() {
        var machine = Machine(handshake: .init(preferRESP3: false))
        #expect(machine.enqueue(7) == .none)
        #expect(machine.channelActive() == .ready(protocolVersion: 2, write: [7]))
        #expect(machine.enqueue(8) == .write([8]))
    }

    @Test func refusedAuthFailsEverythingAndCloses() {
        var machine = Machine(handshake: .init(username: "bob", password: "bad", preferRESP3: false))
        #expect(args(machine.channelActive()) == ["AUTH", "bob", "bad"])
        #expect(machine.enqueue(1) == .none)
        let action = machine.received(.error("WRONGPASS invalid username-password pair or user is disabled."))
        guard case .fail(let ids, let error, let close) = action else {
            Issue.record("expected fail, got \(action)")
            return
        }
        #expect(ids == [1] && close && error.kind == .handshakeFailed)
        // Later commands fail at once without touching the channel.
        guard case .fail([2], _, false) = machine.enqueue(2) else {
            Issue.record("a closed connection must refuse commands")
            return
        }
    }

    @Test func pipelinedRepliesCompleteInOrderAndPushesAreSkipped() {
        var machine = Machine(handshake: .init(preferRESP3: false))
        _ = machine.channelActive()
        for id in 1...100 { #expect(machine.enqueue(Machine.ID(id)) == .write([Machine.ID(id)])) }
        #expect(machine.pendingCount == 100)
        for id in 1...100 {
            if id == 50 { #expect(machine.received(.push([.bulkString(ByteBuffer(string: "invalidate"))])) == .none) }
            #expect(machine.received(.integer(Int64(id))) == .succeed(Machine.ID(id), .integer(Int64(id))))
        }
        #expect(machine.pendingCount == 0)
        // A reply nobody waits for means the stream is out of step: close.
        guard case .fail([], let error, true) = machine.received(.simpleString("?")) else {
            Issue.record("an unexpected reply must close the connection")
            return
        }
        #expect(error.kind == .protocolViolation)
    }

    @Test func timeoutFailsAllInFlightAndIgnoresAnsweredIDs() {
        var machine = Machine(handshake: .init(preferRESP3: false))
        _ = machine.channelActive()
        _ = machine.enqueue(1)
        _ = machine.enqueue(2)
        _ = machine.enqueue(3)
        _ = machine.received(.simpleString("one"))
        #expect(machine.timedOut(1) == .none, "id 1 was answered")
        guard case .fail(let ids, let error, true) = machine.timedOut(2) else {
            Issue.record("a timeout must fail and close")
            return
        }
        #expect(ids == [2, 3] && error.kind == .timedOut)
        #expect(machine.timedOut(3) == .none)
        #expect(machine.channelInactive(nil) == .none)
    }

    @Test func handshakeTimeoutAndPeerClose() {
        var machine = Machine(handshake: .init(preferRESP3: true))
        _ = machine.channelActive()
        _ = machine.enqueue(1)
        guard case .fail([1], let error, true) = machine.timedOut(nil) else {
            Issue.record("a handshake that does not finish must fail")
            return
        }
        #expect(error.kind == .timedOut)

        var other = Machine(handshake: .init(preferRESP3: false))
        _ = other.channelActive()
        _ = other.enqueue(5)
        guard case .fail([5], let closed, false) = other.channelInactive(nil) else {
            Issue.record("a closed channel fails what is in flight")
            return
        }
        #expect(closed.kind == .connectionClosed)
    }

    @Test func badBytesClose() {
        var machine = Machine(handshake: .init(preferRESP3: false))
        _ = machine.channelActive()
        _ = machine.enqueue(1)
        guard
            case .fail([1], let error, true) = machine.decodingFailed(RESPDecodingError(kind: .unknownType, offset: 0))
        else {
            Issue.record("undecodable bytes must close")
            return
        }
        #expect(error.kind == .protocolViolation)
    }

    @Test func fifoCompactsWithoutLosingOrder() {
        var fifo = Machine.FIFO()
        var expected: [Machine.ID] = []
        var next: Machine.ID = 0
        for round in 0..<500 {
            for _ in 0..<(round % 7) {
                next += 1
                fifo.push(next)
                expected.append(next)
            }
            for _ in 0..<(round % 5) where !expected.isEmpty {
                #expect(fifo.pop() == expected.removeFirst())
            }
            #expect(fifo.count == expected.count)
        }
        #expect(fifo.all == expected)
    }
}
