import Foundation
import Testing

@testable import ImageCore

@Suite struct FetchStateMachineTests {
    typealias Machine = FetchStateMachine<Int, String, String, String, String, String, String>

    private func sub(
        _ id: Int, decode: String = "d", product: String = "p", waits: Bool = false, source: Bool = false
    ) -> Machine.Subscriber {
        Machine.Subscriber(
            id: id, decodeKey: decode, productKey: product, waitsForStore: waits, wantsSource: source, info: "s\(id)")
    }

    private func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .startSource: "startSource"
            case .cancelSource: "cancelSource"
            case .startDecode(let key, let source, _): "decode(\(key),\(source))"
            case .startProduct(let key, let decoded, _, _): "product(\(key),\(decoded))"
            case .deliver(let subs, let product): "deliver(\(subs.map(\.id).sorted()),\(product))"
            case .deliverSource(let subs, let source): "source(\(subs.map(\.id).sorted()),\(source))"
            case .fail(let subs, let error): "fail(\(subs.map(\.id).sorted()),\(error.code))"
            }
        }
    }

    @Test func firstSubscriberStartsTheSourceOthersJoin() {
        var machine = Machine()
        #expect(describe(machine.subscribe(sub(1))) == ["startSource"])
        #expect(describe(machine.subscribe(sub(2))) == [])
        #expect(describe(machine.sourceFinished("bytes")) == ["decode(d,bytes)"])
        #expect(describe(machine.decodeFinished("d", "image")) == ["product(p,image)"])
        #expect(describe(machine.productReady("p", "final", stored: false)) == ["deliver([1, 2],final)"])
        #expect(machine.isFinished)
    }

    @Test("a source-only subscriber is served the source, before any decode, and never starts one")
    func sourceOnlySubscribersAreServedTheSource() {
        var machine = Machine()
        #expect(describe(machine.subscribe(sub(1, source: true))) == ["startSource"])
        _ = machine.subscribe(sub(2))
        #expect(describe(machine.sourceFinished("bytes")) == ["source([1],bytes)", "decode(d,bytes)"])
        // One joining after the source ended is served at once; the decode in flight is not its business.
        #expect(describe(machine.subscribe(sub(3, source: true))) == ["source([3],bytes)"])
        #expect(
            describe(machine.decodeFailed("d", ImageError(.badImageData, stage: .decode))) == ["fail([2],badImageData)"]
        )
        #expect(machine.isFinished)

        var alone = Machine()
        _ = alone.subscribe(sub(1, source: true))
        _ = alone.subscribe(sub(2, source: true))
        #expect(describe(alone.sourceFinished("bytes")) == ["source([1, 2],bytes)"])
        #expect(alone.isFinished, "nothing is decoded for source-only subscribers")
        #expect(alone.decodes.isEmpty)
    }

    @Test func distinctDecodeAndProductKeysRunOncePerKey() {
        var machine = Machine()
        _ = machine.subscribe(sub(1, decode: "full", product: "a"))
        _ = machine.subscribe(sub(2, decode: "full", product: "b"))
        _ = machine.subscribe(sub(3, decode: "thumb", product: "c"))
        let decodes = describe(machine.sourceFinished("bytes")).sorted()
        #expect(decodes == ["decode(full,bytes)", "decode(thumb,bytes)"])
        #expect(describe(machine.decodeFinished("full", "F")).sorted() == ["product(a,F)", "product(b,F)"])
        #expect(describe(machine.productReady("a", "A", stored: true)) == ["deliver([1],A)"])
        #expect(!machine.isFinished)
    }

    @Test func cancellingOneLeavesTheOthersAndTheLastCancelsTheSource() {
        var machine = Machine()
        _ = machine.subscribe(sub(1))
        _ = machine.subscribe(sub(2))
        #expect(describe(machine.cancel(1)) == ["fail([1],cancelled)"])
        #expect(!machine.isFinished)
        #expect(describe(machine.cancel(2)) == ["fail([2],cancelled)", "cancelSource"])
        #expect(machine.isFinished)
        #expect(describe(machine.sourceFinished("late")) == [])
        #expect(describe(machine.cancel(2)) == [])
    }

    @Test func sourceFailureFailsEveryone() {
        var machine = Machine()
        _ = machine.subscribe(sub(1))
        _ = machine.subscribe(sub(2))
        #expect(
            describe(machine.sourceFailed(.invalidDownloadStatusCode(404))) == [
                "fail([1, 2],invalidDownloadStatusCode)"
            ])
        #expect(machine.isFinished)
    }

    @Test func waitingSubscribersAreDeliveredOnlyOnceStored() {
        var machine = Machine()
        _ = machine.subscribe(sub(1, waits: true))
        _ = machine.subscribe(sub(2, waits: false))
        _ = machine.sourceFinished("b")
        _ = machine.decodeFinished("d", "i")
        #expect(describe(machine.productReady("p", "P", stored: false)) == ["deliver([2],P)"])
        #expect(describe(machine.productStored("p")) == ["deliver([1],P)"])
        #expect(machine.isFinished)
    }

    @Test func lateJoinerReusesFinishedStages() {
        var machine = Machine()
        _ = machine.subscribe(sub(1, product: "a", waits: true))
        _ = machine.sourceFinished("b")
        _ = machine.decodeFinished("d", "i")
        _ = machine.productReady("a", "A", stored: false)
        #expect(describe(machine.subscribe(sub(2, product: "a"))) == ["deliver([2],A)"])
        #expect(describe(machine.subscribe(sub(3, product: "z"))) == ["product(z,i)"])
    }

    @Test func decodeFailureFailsOnlyItsSubscribers() {
        var machine = Machine()
        _ = machine.subscribe(sub(1, decode: "x"))
        _ = machine.subscribe(sub(2, decode: "y", product: "q"))
        _ = machine.sourceFinished("b")
        #expect(
            describe(machine.decodeFailed("x", ImageError(.badImageData, stage: .decode))) == ["fail([1],badImageData)"]
        )
        #expect(!machine.isFinished)
    }
}
