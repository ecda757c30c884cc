import AVIFCoder
import Foundation
import ImageCore
import Testing

/// Budgets, hostile bytes, on-demand frames and incremental decoding.
@Suite struct AVIFCoderSafetyTests {
    let coder = AVIFCoder.shared

    /// Rewrites the 32-bit big-endian field `offset` bytes after every occurrence of the box type `type`.
    static func patch(_ data: Data, box type: String, fieldOffset: Int, value: UInt32) -> Data {
        var bytes = [UInt8](data)
        let tag = Array(type.utf8)
        var i = 0
        var patched = 0
        while i + 4 <= bytes.count {
            if Array(bytes[i..<i + 4]) == tag, i + fieldOffset + 4 <= bytes.count {
                for k in 0..<4 { bytes[i + fieldOffset + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(k))) }
                patched += 1
            }
            i += 1
        }
        precondition(patched > 0, "no \(type) box")
        return Data(bytes)
    }

    static func animation(frames: Int = 5, width: Int = 24, height: Int = 16) throws -> Data {
        try AVIFCoder.shared.encode(
            rgbaImage(width: width, height: height, alpha: true, frames: frames), as: .avif,
            options: ImageEncodeOptions(effort: .fast, lossless: true))
    }

    @Test func pixelBudgetIsEnforcedFromTheHeaderByEveryEntryPoint() throws {
        let data = AVIFTestFiles.encode(.init(width: 20, height: 10))
        let over = ImageDecodeOptions(maxPixelCount: 199)
        for attempt in [
            { _ = try coder.decode(data, options: over) },
            { _ = try coder.makeAnimatedProvider(for: data, options: over) },
            { _ = try CodersManager(coders: [coder]).decode(data, options: over) },
        ] as [() throws -> Void] {
            let error = #expect(throws: ImageError.self) { try attempt() }
            #expect(error?.code == .imageTooLarge && error?.stage == .decode)
        }
        #expect(try coder.decode(data, options: ImageDecodeOptions(maxPixelCount: 200)).width == 20)
        let incremental = coder.makeIncrementalDecoder(options: over)
        incremental.update(data.prefix(data.count - 10), isFinal: false)
        #expect(throws: ImageError.self) { try incremental.currentImage() }
    }

    @Test func declaredHugeSizeIsRefusedBeforeLibavifDecodes() throws {
        // ispe: size(4) type(4) version+flags(4) width(4) height(4): the fields sit 8 and 12 bytes after the type.
        var bomb = Self.patch(
            AVIFTestFiles.encode(.init(width: 8, height: 8)), box: "ispe", fieldOffset: 8, value: 65535)
        bomb = Self.patch(bomb, box: "ispe", fieldOffset: 12, value: 65535)
        #expect(coder.probe(bomb)?.width == 65535)
        let error = #expect(throws: ImageError.self) { try coder.decode(bomb, options: .init()) }
        #expect(error?.code == .imageTooLarge)
        // A budget above libavif's own limit still refuses through libavif's limit, typed the same way.
        let huge = ImageDecodeOptions(maxPixelCount: Int(Int32.max) * 4)
        let viaLibavif = #expect(throws: ImageError.self) { try coder.decode(bomb, options: huge) }
        #expect(viaLibavif?.code == .imageTooLarge || viaLibavif?.code == .badImageData)
    }

    @Test func sequenceDeclaringBillionsOfFramesIsRefusedFromTheSampleTable() throws {
        // stsz: version+flags(4) sample_size(4) sample_count(4) after the type.
        let bomb = Self.patch(try Self.animation(), box: "stsz", fieldOffset: 12, value: 0x7FFF_FFFF)
        #expect(coder.probe(bomb)?.frameCount == 0x7FFF_FFFF)
        for options in [ImageDecodeOptions(), ImageDecodeOptions(firstFrameOnly: true)] {
            let error = #expect(throws: ImageError.self) { try coder.decode(bomb, options: options) }
            #expect(error?.code == .imageTooLarge)
        }
    }

    @Test func preloadingEveryFrameMustFitThePixelBudgetWhileOnDemandDecodingNeedNot() throws {
        let data = try Self.animation(frames: 5, width: 24, height: 16)  // 384 px a frame, 1,920 in all
        let budget = ImageDecodeOptions(maxPixelCount: 1000, preloadAllFrames: true)
        let error = #expect(throws: ImageError.self) { try coder.decode(data, options: budget) }
        #expect(error?.code == .imageTooLarge)
        let onDemand = try coder.decode(data, options: ImageDecodeOptions(maxPixelCount: 1000))
        #expect(onDemand.frameCount == 5 && onDemand.frames.count == 1)
        #expect(try onDemand.frame(at: 4).pixels.width == 24)
    }

    @Test func garbageAndEveryTruncationThrowTypedErrors() throws {
        for garbage in [
            Data(), Data("....ftypavif".utf8), Data([0, 0, 0, 16] + Array("ftypavif".utf8) + [0, 0, 0, 0]),
            Data(
                [0, 0, 0, 20] + Array("ftypavis".utf8) + [0, 0, 0, 0] + Array("avis".utf8) + [0xFF, 0xFF, 0xFF, 0xFF]),
        ] {
            let error = #expect(throws: ImageError.self) { try coder.decode(garbage, options: .init()) }
            #expect(error?.code == .badImageData)
        }
        for data in [AVIFTestFiles.encode(.init(width: 16, height: 12, alpha: true)), try Self.animation(frames: 3)] {
            let bytes = [UInt8](data)
            for length in stride(from: 0, to: bytes.count - 1, by: 7) {
                let error = #expect(throws: ImageError.self, "prefix \(length) of \(bytes.count)") {
                    try coder.decode(Data(bytes[..<length]), options: ImageDecodeOptions(preloadAllFrames: true))
                }
                #expect(error?.code == .badImageData, "prefix \(length): \(String(describing: error))")
                _ = coder.probe(Data(bytes[..<length]))
            }
        }
    }

    @Test func flippedBytesNeverTrap() throws {
        let data = [UInt8](AVIFTestFiles.encode(.init(width: 16, height: 12, alpha: true)))
        var generator = SplitMix(seed: 12)
        for _ in 0..<300 {
            var bytes = data
            for _ in 0..<3 {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            do {
                _ = try coder.decode(Data(bytes), options: ImageDecodeOptions(preloadAllFrames: true))
            } catch {
                #expect(error is ImageError)
            }
        }
    }

    @Test func animationFramesDecodeOnDemandInAnyOrderEqualToPreloaded() throws {
        let data = try Self.animation(frames: 5)
        let preloaded = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true))
        let lazy = try coder.decode(data, options: .init())
        #expect(lazy.frames.count == 1 && lazy.frameCount == 5 && lazy.animatedProvider != nil)
        #expect(lazy.memoryCost > lazy.frames[0].pixels.byteCount)
        for index in [4, 1, 3, 0, 2, 4] {
            #expect(try lazy.frame(at: index).pixels == preloaded.frames[index].pixels, "frame \(index)")
        }
        #expect(throws: ImageError.self) { try lazy.frame(at: 5) }
        let provider = try coder.makeAnimatedProvider(for: data, options: .init())
        #expect(provider.frameCount == 5 && provider.canvasSize == PixelSize(width: 24, height: 16))
        #expect(abs(provider.duration(at: 2) - 0.25) < 0.001)
        let first = try coder.decode(data, options: ImageDecodeOptions(firstFrameOnly: true))
        #expect(first.frameCount == 1 && first.pixels == preloaded.pixels)
        let thumbs = try coder.decode(
            data,
            options: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 12, height: 12), preloadAllFrames: true))
        #expect(thumbs.frames.allSatisfy { $0.pixels.width == 12 && $0.pixels.height == 8 })
    }

    @Test func providerServesConcurrentCallers() async throws {
        let data = try Self.animation(frames: 5)
        let image = try coder.decode(data, options: .init())
        let expected = try coder.decode(data, options: ImageDecodeOptions(preloadAllFrames: true)).frames.map(\.pixels)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask { try image.frame(at: (task * 3) % 5).pixels == expected[(task * 3) % 5] }
            }
            for try await same in group { #expect(same) }
        }
    }

    @Test func singleTileStillShowsNothingUntilCompleteThenEqualsAFullDecode() throws {
        let data = AVIFTestFiles.encode(.init(width: 48, height: 32, alpha: true))
        let decoder = coder.makeIncrementalDecoder(options: .init())
        #expect(coder.canIncrementallyDecode(data.prefix(16)))
        for length in stride(from: 1, to: data.count, by: 9) {
            decoder.update(data.prefix(length), isFinal: false)
            #expect(try decoder.currentImage() == nil, "prefix \(length)")
        }
        decoder.update(data, isFinal: true)
        let final = try #require(try decoder.currentImage())
        #expect(!final.metadata.isPartial)
        #expect(final.pixels == (try coder.decode(data, options: .init())).pixels)
    }

    @Test func incrementalDecoderTakesNoBytesAndGarbage() throws {
        // Regression (fuzzing): an empty prefix trapped while copying into the decoder's unallocated buffer.
        for prefix in [Data(), Data([0, 0, 0, 12]), Data([0, 0, 0, 16] + Array("ftypavif".utf8) + [0, 0, 0, 0])] {
            let decoder = coder.makeIncrementalDecoder(options: .init())
            decoder.update(prefix, isFinal: false)
            #expect(try decoder.currentImage() == nil)
            decoder.update(prefix, isFinal: true)
            #expect(throws: ImageError.self) { try decoder.currentImage() }
        }
    }

    @Test func gridTilesAppearAsTheyArrive() throws {
        let data = AVIFTestFiles.encode(.init(width: 64, height: 256, grid: (1, 4)))
        let full = try coder.decode(data, options: .init())
        let decoder = coder.makeIncrementalDecoder(options: .init())
        var rowsSeen: [Int] = []
        for length in stride(from: 1, to: data.count, by: max(1, data.count / 60)) {
            decoder.update(data.prefix(length), isFinal: false)
            guard let image = try decoder.currentImage() else { continue }
            #expect(image.metadata.isPartial && image.width == 64 && image.height == 256)
            // Rows are complete from the top: count the leading rows equal to the full decode's.
            let rowBytes = 64 * 3
            var rows = 0
            while rows < 256,
                image.pixels.bytes[rows * rowBytes..<(rows + 1) * rowBytes]
                    == full.pixels.bytes[rows * rowBytes..<(rows + 1) * rowBytes]
            {
                rows += 1
            }
            rowsSeen.append(rows)
        }
        #expect(rowsSeen.contains { $0 >= 64 && $0 < 256 }, "partial rows seen: \(rowsSeen)")
        #expect(rowsSeen == rowsSeen.sorted())
        decoder.update(data, isFinal: true)
        #expect(try decoder.currentImage()?.pixels == full.pixels)
    }
}

/// A tiny deterministic generator for mutation tests.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
