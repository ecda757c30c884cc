import Foundation
import ImageCore
import Testing

@testable import AVIFCoder

/// The container walk alone: what the boxes declare, on synthesized box trees and prefixes.
@Suite struct AVIFContainerTests {
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = UInt32(8 + payload.count)
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            + Array(type.utf8) + payload
    }

    static func u32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
    static let fullBox: [UInt8] = [0, 0, 0, 0]

    static func ftyp(_ major: String) -> [UInt8] {
        box("ftyp", Array(major.utf8) + u32(0) + Array("mif1".utf8) + Array(major.utf8))
    }

    /// meta with pitm = 1 and an ipma giving item 1 the properties 1 (ispe 300x200) and 2 (pixi).
    static func meta(width: UInt32 = 300, height: UInt32 = 200) -> [UInt8] {
        let ispe = box("ispe", fullBox + u32(width) + u32(height))
        let pixi = box("pixi", fullBox + [3, 8, 8, 8])
        let ipco = box("ipco", ispe + pixi)
        let ipma = box("ipma", fullBox + u32(1) + [0, 1, 2, 0x81, 0x02])
        return box("meta", fullBox + box("pitm", fullBox + [0, 1]) + box("iprp", ipco + ipma))
    }

    static func track(width: UInt32, height: UInt32, samples: UInt32, handler: String = "pict", elst: [UInt8]? = nil)
        -> [UInt8]
    {
        // tkhd v0: created, modified, track ID, reserved, duration (1000), 8 reserved, layer/group/volume/reserved,
        // matrix (36), width and height in 16.16.
        let tkhd = box(
            "tkhd",
            fullBox + u32(0) + u32(0) + u32(1) + u32(0) + u32(1000) + [UInt8](repeating: 0, count: 16)
                + [UInt8](repeating: 0, count: 36) + u32(width << 16) + u32(height << 16))
        let stsz = box("stsz", fullBox + u32(0) + u32(samples))
        let mdia = box(
            "mdia", box("hdlr", fullBox + u32(0) + Array(handler.utf8)) + box("minf", box("stbl", stsz)))
        let edts = elst.map { box("edts", box("elst", $0)) } ?? []
        return box("trak", tkhd + edts + mdia)
    }

    @Test func stillReadsThePrimaryItemsIspe() {
        let file = Self.ftyp("avif") + Self.meta() + Self.box("mdat", [1, 2, 3])
        let container = AVIFContainer.read(Data(file))
        #expect(container?.primarySize == PixelSize(width: 300, height: 200))
        #expect(container?.frameCount == 1 && container?.isTruncated == false && container?.decodesTrack == false)
    }

    @Test func sequenceReadsTheColourTrackAndSkipsOtherHandlers() {
        let moov = Self.box(
            "moov",
            Self.track(width: 10, height: 10, samples: 9, handler: "soun")
                + Self.track(width: 150, height: 100, samples: 42))
        let file = Self.ftyp("avis") + Self.meta() + moov
        let container = AVIFContainer.read(Data(file))
        #expect(container?.frameSize == PixelSize(width: 150, height: 100))
        #expect(container?.frameCount == 42 && container?.loopCount == 0)
        // With the avif major brand libavif decodes the primary item instead.
        let still = AVIFContainer.read(Data(Self.ftyp("avif") + Self.meta() + moov))
        #expect(still?.frameCount == 1 && still?.frameSize == PixelSize(width: 300, height: 200))
    }

    @Test func editListGivesTheLoopCount() {
        func loops(flags: UInt8, segment: UInt32) -> Int? {
            let elst = [0, 0, 0, flags] + Self.u32(1) + Self.u32(segment) + Self.u32(0) + [0, 1, 0, 0]
            let file = Self.ftyp("avis") + Self.box("moov", Self.track(width: 8, height: 8, samples: 3, elst: elst))
            return AVIFContainer.read(Data(file))?.loopCount
        }
        #expect(loops(flags: 0, segment: 1000) == 1)  // one edit, no repeat: plays once
        #expect(loops(flags: 1, segment: 250) == 4)  // repeats over a track of 1000: four plays
        #expect(loops(flags: 1, segment: 0) == 0)
    }

    @Test func prefixesAndGarbageNeverTrapAndSayTruncated() {
        let head = Self.ftyp("avis") + Self.meta(width: 65535, height: 65535)
        let file = head + Self.box("moov", Self.track(width: 64, height: 64, samples: 0xFFFF_FFFF))
        for length in 0...file.count {
            let container = AVIFContainer.read(Data(file.prefix(length)))
            if length < 16 { #expect(container == nil || container?.majorBrand.isEmpty == false) }
            // Every prefix that ends inside a box (not at the end of ftyp or meta) is reported as truncated.
            if length > Self.ftyp("avis").count + 8 && length < file.count && length != head.count {
                #expect(container?.isTruncated == true, "prefix \(length)")
            }
        }
        #expect(AVIFContainer.read(Data(file))?.frameCount == Int(UInt32.max))
        var generator = SplitMix(seed: 3)
        for _ in 0..<2000 {
            var bytes = file
            for _ in 0..<4 {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            _ = AVIFContainer.read(Data(bytes))
        }
        #expect(AVIFContainer.read(Data("not a box at all".utf8)) == nil)
        // A 64-bit box size past the end, and a zero-size (to the end) box.
        let large = [0, 0, 0, 1] + Array("meta".utf8) + [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(AVIFContainer.read(Data(Self.ftyp("avif") + large))?.isTruncated == true)
        #expect(AVIFContainer.read(Data(Self.ftyp("avif") + [0, 0, 0, 0] + Array("mdat".utf8)))?.isTruncated == false)
    }
}
