import Foundation
import HEIFCoder
import ImageCore
import Testing

/// Hostile item graphs, built box by box: each gets a typed `ImageError` from the coder's own validation, before
/// libheif 1.15 (which loops, recurses or fails deep inside on several of them) sees the file.
@Suite struct HEIFItemGraphTests {
    let tile = HEVCTile.gradient

    func decode(_ data: Data, options: ImageDecodeOptions = ImageDecodeOptions()) throws -> Image {
        try HEIFCoder.shared.decode(data, options: options)
    }

    /// Expects `badImageData` whose message names `reason`, within a bounded time (hostile graphs must not spin).
    func expectRejected(_ data: Data, _ reason: String, code: ImageError.Code = .badImageData) {
        let started = ContinuousClock.now
        do {
            let image = try decode(data)
            Issue.record("decoded \(image) where '\(reason)' was expected")
        } catch let error as ImageError {
            #expect(error.code == code, "\(error)")
            #expect(error.stage == .decode)
            #expect(error.message?.contains(reason) == true, "\(error)")
        } catch {
            Issue.record("non-ImageError \(error)")
        }
        // Generous bound for a debug build on a busy machine: the failure is structural, never a decode.
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    func grid(rows: Int, columns: Int, tiles: [UInt32], width: Int? = nil, height: Int? = nil) -> HEIFFileBuilder {
        var builder = HEIFFileBuilder()
        let w = width ?? columns * tile.width
        let h = height ?? rows * tile.height
        builder.items.append(
            HEIFFileBuilder.Item(
                id: 1, type: "grid",
                data: HEIFFileBuilder.gridDescriptor(rows: rows, columns: columns, width: w, height: h),
                properties: [HEIFFileBuilder.ispe(w, h)]))
        for id in Set(tiles) where id >= 2 { builder.items.append(tile.item(id)) }
        builder.items.sort { $0.id < $1.id }
        builder.references.append(("dimg", 1, tiles))
        return builder
    }

    @Test func aBuiltSingleItemFileDecodes() throws {
        var builder = HEIFFileBuilder()
        builder.items = [tile.item(1)]
        let image = try decode(builder.build())
        #expect(image.width == 64 && image.height == 64)
    }

    @Test func aBuiltTwoByTwoGridDecodesToItsOutputSize() throws {
        let data = grid(rows: 2, columns: 2, tiles: [2, 3, 4, 5]).build()
        #expect(ImageFormat.detect(data) == .heic)
        #expect(HEIFCoder.shared.probe(data) == ImageProperties(format: .heic, width: 128, height: 128, frameCount: 1))
        let image = try decode(data)
        #expect(image.width == 128 && image.height == 128)
    }

    @Test func aGridOutputSmallerThanItsTilesIsCropped() throws {
        let image = try decode(grid(rows: 2, columns: 2, tiles: [2, 3, 4, 5], width: 100, height: 90).build())
        #expect(image.width == 100 && image.height == 90)
    }

    @Test func aGridWithFewerTilesThanRowsTimesColumnsIsRejected() {
        expectRejected(grid(rows: 2, columns: 2, tiles: [2, 3, 4]).build(), "but 3 tile(s) are referenced")
    }

    @Test func aGridWithMoreTilesThanRowsTimesColumnsIsRejected() {
        expectRejected(grid(rows: 1, columns: 2, tiles: [2, 3, 4]).build(), "but 3 tile(s) are referenced")
    }

    @Test func aGridReferencingAMissingTileIsRejected() {
        var builder = grid(rows: 1, columns: 2, tiles: [2, 3])
        builder.items.removeAll { $0.id == 3 }
        expectRejected(builder.build(), "reference to missing item 3")
    }

    @Test func aTileWithoutDataIsRejected() {
        var builder = grid(rows: 1, columns: 2, tiles: [2, 3])
        builder.items[2].data = nil
        expectRejected(builder.build(), "has no data location")
    }

    @Test func tilesThatDoNotCoverTheGridAreRejected() {
        expectRejected(
            grid(rows: 1, columns: 2, tiles: [2, 3], width: 200, height: 64).build(), "do not cover")
    }

    @Test func aReferenceCycleBetweenTwoGridsIsRejected() {
        var builder = HEIFFileBuilder()
        let descriptor = HEIFFileBuilder.gridDescriptor(rows: 1, columns: 1, width: 64, height: 64)
        builder.items = [
            HEIFFileBuilder.Item(id: 1, type: "grid", data: descriptor, properties: [HEIFFileBuilder.ispe(64, 64)]),
            HEIFFileBuilder.Item(id: 2, type: "grid", data: descriptor, properties: [HEIFFileBuilder.ispe(64, 64)]),
        ]
        builder.references = [("dimg", 1, [2]), ("dimg", 2, [1])]
        expectRejected(builder.build(), "reference cycle")
    }

    @Test func aCycleAwayFromThePrimaryImageIsRejectedToo() {
        var builder = HEIFFileBuilder()
        builder.items = [
            tile.item(1),
            HEIFFileBuilder.Item(id: 7, type: "iden", data: nil, properties: []),
            HEIFFileBuilder.Item(id: 8, type: "iden", data: nil, properties: []),
        ]
        builder.references = [("dimg", 7, [8]), ("dimg", 8, [7])]
        expectRejected(builder.build(), "reference cycle")
    }

    @Test func anItemDerivedFromItselfIsRejected() {
        var builder = HEIFFileBuilder()
        builder.items = [
            HEIFFileBuilder.Item(id: 1, type: "iden", data: nil, properties: [HEIFFileBuilder.ispe(64, 64)])
        ]
        builder.references = [("dimg", 1, [1])]
        expectRejected(builder.build(), "reference to itself")
    }

    @Test func aGridWhoseTileIsAGridIsRejected() {
        var builder = HEIFFileBuilder()
        let descriptor = HEIFFileBuilder.gridDescriptor(rows: 1, columns: 1, width: 64, height: 64)
        builder.items = [
            HEIFFileBuilder.Item(id: 1, type: "grid", data: descriptor, properties: [HEIFFileBuilder.ispe(64, 64)]),
            HEIFFileBuilder.Item(id: 2, type: "grid", data: descriptor, properties: [HEIFFileBuilder.ispe(64, 64)]),
            tile.item(3),
        ]
        builder.references = [("dimg", 1, [2]), ("dimg", 2, [3])]
        expectRejected(builder.build(), "tile 2 of grid 1 is not a coded image")
    }

    @Test func derivationsNestedTooDeepAreRejected() {
        var builder = HEIFFileBuilder()
        for id in UInt32(1)...6 {
            builder.items.append(
                HEIFFileBuilder.Item(id: id, type: "iden", data: nil, properties: [HEIFFileBuilder.ispe(64, 64)]))
            builder.references.append(("dimg", id, [id + 1]))
        }
        builder.items.append(tile.item(7))
        expectRejected(builder.build(), "nest deeper than 4")
    }

    @Test func aMissingPrimaryItemIsRejected() {
        var builder = HEIFFileBuilder()
        builder.items = [tile.item(1)]
        builder.primary = 9
        expectRejected(builder.build(), "primary item 9 does not exist")
        builder.primary = nil
        expectRejected(builder.build(), "no primary item")
    }

    @Test func anUndecodablePrimaryTypeIsRejected() {
        var builder = HEIFFileBuilder()
        builder.items = [
            HEIFFileBuilder.Item(id: 1, type: "jpeg", data: [0xFF, 0xD8], properties: [HEIFFileBuilder.ispe(8, 8)])
        ]
        expectRejected(builder.build(), "'jpeg'")
    }

    @Test func aCodedItemWithoutSizeIsRejected() {
        var builder = HEIFFileBuilder()
        var item = tile.item(1)
        item.properties.removeLast()
        builder.items = [item]
        expectRejected(builder.build(), "has no 'ispe'")
    }

    @Test func aZeroSizeIsRejected() {
        var builder = HEIFFileBuilder()
        builder.items = [tile.item(1)]
        builder.items[0].properties[1] = HEIFFileBuilder.ispe(0, 0)
        expectRejected(builder.build(), "declares size 0x0")
    }

    @Test func anIpmaIndexPastTheIpcoIsRejected() {
        var builder = HEIFFileBuilder()
        builder.items = [tile.item(1)]
        builder.extraAssociations = [(1, 100)]
        expectRejected(builder.build(), "property 100")
    }

    @Test func aClapWithAZeroDenominatorIsRejected() {
        var builder = HEIFFileBuilder()
        builder.items = [tile.item(1, extra: [HEIFFileBuilder.clap([32, 1, 32, 0, 0, 1, 0, 1])])]
        expectRejected(builder.build(), "zero denominator")
    }

    @Test func anImageSequenceWithoutAPrimaryImageIsRejected() {
        let ftyp = HEIFFileBuilder.box("ftyp", Array("msf1".utf8) + HEIFFileBuilder.be32(0) + Array("msf1hevc".utf8))
        let moov = HEIFFileBuilder.box("moov", HEIFFileBuilder.box("mvhd", [UInt8](repeating: 0, count: 100)))
        expectRejected(Data(ftyp + moov), "image sequence")
    }

    @Test func anAbsurdSizeIsRefusedFromTheHeaderBeforeDecoding() throws {
        var builder = HEIFFileBuilder()
        builder.items = [tile.item(1)]
        builder.items[0].properties[1] = HEIFFileBuilder.ispe(100_000, 100_000)
        let data = builder.build()
        #expect(HEIFCoder.shared.probe(data)?.width == 100_000)
        expectRejected(data, "over the budget", code: .imageTooLarge)
        #expect(throws: ImageError.self) {
            try CodersManager.decode(data, with: HEIFCoder.shared, options: ImageDecodeOptions())
        }
    }

    @Test func theBudgetCountsEveryTileNotOnlyTheOutput() {
        // A 1x1 grid whose output is 64x64 but whose tile is declared 8000x8000: the tile is what libheif decodes.
        var builder = grid(rows: 1, columns: 1, tiles: [2], width: 64, height: 64)
        builder.items[1].properties[1] = HEIFFileBuilder.ispe(8000, 8000)
        var options = ImageDecodeOptions()
        options.maxPixelCount = 1_000_000
        #expect {
            try decode(builder.build(), options: options)
        } throws: { ($0 as? ImageError)?.code == .imageTooLarge }
    }

    /// Every prefix of a valid grid file (a download cut anywhere) gets a typed error, never a trap or a hang; the
    /// complete file decodes. All prefixes are tried, so nothing random is involved.
    @Test func everyTruncationOfAGridFileGetsATypedError() throws {
        let data = grid(rows: 2, columns: 2, tiles: [2, 3, 4, 5]).build()
        let started = ContinuousClock.now
        for length in stride(from: 0, to: data.count, by: max(1, data.count / 400)) {
            do {
                let image = try decode(data.prefix(length))
                Issue.record("a \(length)-byte prefix decoded to \(image)")
            } catch let error as ImageError {
                #expect(error.code == .badImageData, "\(length): \(error)")
            }
        }
        #expect(try decode(data).width == 128)
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}
