import Foundation
import ImageTestSupport
import Testing

@testable import ImageCore

/// Every public option declares what it changes, once (issue 32, item 1). Where Swift can't make a missing
/// declaration a compile error, these tests enumerate the options and fail: a stored property of the decode or
/// encode options without a `Field`, an `ImageOptions` member without a `Flag`. Then the declarations are held to
/// what the key builder does: a key-part option changes the key, an option declared out of the key never does.
@Suite struct OptionCatalogTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/ImageCore").standardizedFileURL

    @Test("every stored property of ImageDecodeOptions has a Field (and so a declaration)")
    func decodeOptionsAreAllDeclared() {
        let stored = Set(Mirror(reflecting: ImageDecodeOptions()).children.compactMap(\.label))
        let declared = Set(ImageDecodeOptions.Field.allCases.map(\.rawValue))
        #expect(
            stored == declared, "undeclared: \(stored.subtracting(declared)); stale: \(declared.subtracting(stored))")
    }

    @Test("every stored property of ImageEncodeOptions has a Field (and so a declaration)")
    func encodeOptionsAreAllDeclared() {
        let stored = Set(Mirror(reflecting: ImageEncodeOptions()).children.compactMap(\.label))
        let declared = Set(ImageEncodeOptions.Field.allCases.map(\.rawValue))
        #expect(
            stored == declared, "undeclared: \(stored.subtracting(declared)); stale: \(declared.subtracting(stored))")
    }

    @Test("every ImageOptions member is made from its Flag, one bit each")
    func everyFlagIsDeclared() throws {
        let text = try String(
            contentsOf: Self.sources.appendingPathComponent("Options/ImageOptions.swift"), encoding: .utf8)
        let optionsPart = try #require(text.components(separatedBy: "public struct ImageCacheType").first)
        let members = optionsPart.components(separatedBy: "\n").filter { $0.contains("public static let") }
        #expect(members.count == ImageOptions.Flag.allCases.count)
        for line in members {
            let declared = ImageOptions.Flag.allCases.contains { line.contains("= ImageOptions(.\($0))") }
            #expect(declared, "not made from a Flag: \(line)")
        }
        let bits = ImageOptions.Flag.allCases.map { ImageOptions($0).rawValue }
        #expect(Set(bits).count == bits.count && bits.allSatisfy { $0.nonzeroBitCount == 1 })
        #expect(ImageOptions.retryFailed.rawValue == 1 && ImageOptions.avoidAutoCancelImage.rawValue == 1 << 19)
    }

    @Test("the revalidating flags are the ones whose transfer carries the validators")
    func revalidatingFlagsFollowFromTheDeclarations() {
        #expect(ImageOptions.revalidating == [.refreshCached, .refreshStale])
    }

    @Test("the catalog lists every option and control once, each with at least one effect")
    func catalogIsComplete() {
        let all = OptionCatalog.all
        let names = all.map { "\($0.kind) \($0.name)" }
        #expect(Set(names).count == names.count, "listed twice")
        #expect(all.filter { $0.kind == .flag }.count == ImageOptions.Flag.allCases.count)
        #expect(all.filter { $0.kind == .contextKey }.count >= ContextSlot.allCases.count)
        #expect(all.filter { $0.kind == .control }.count == LoadControl.allCases.count)
        for entry in all { #expect(!entry.traits.effects.isEmpty, "\(entry) declares no effect") }
        // Options that change pixels or the transform are in the key or make the load bypass the levels.
        for entry in all where !entry.traits.effects.isDisjoint(with: [.pixels, .transform]) {
            #expect(entry.traits.key != .none, "\(entry) changes the image but is neither a key part nor a bypass")
        }
        #expect(OptionCatalog.markdownTable.contains("| `convertToSRGB` | decodeOption |"))
    }

    /// One non-default value per decode field, and what the declaration says it does to the key.
    static func changed(_ field: ImageDecodeOptions.Field) -> ImageDecodeOptions {
        var options = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 30, height: 30))
        switch field {
        case .maxPixelCount: options.maxPixelCount = 1000
        case .thumbnailPixelSize: options.thumbnailPixelSize = PixelSize(width: 31, height: 30)
        case .preserveAspectRatio: options.preserveAspectRatio = false
        case .allowsThumbnailUpscaling: options.allowsThumbnailUpscaling = true
        case .scaleDownLimitBytes: options.scaleDownLimitBytes = 4096
        case .firstFrameOnly: options.firstFrameOnly = true
        case .preloadAllFrames: options.preloadAllFrames = true
        case .applyOrientation: options.applyOrientation = false
        case .scaleFactor: options.scaleFactor = 3
        case .animationBudget: options.animationBudget = AnimationBudget(maxFrameCount: 3)
        case .coderOptions: options.coderOptions[TestCoder.Tint.self] = 9
        case .convertToSRGB: options.convertToSRGB = true
        }
        return options
    }

    @Test("a decode option changes the cache key exactly when its declaration makes it a key part")
    func decodeKeyPartsFollowTheDeclarations() throws {
        let manager = ImageManager(cache: RecordingCache(), loader: ScriptedLoader())
        let url = URL(string: "https://h/a.png")!
        var base = ImageContext()
        base.imageDecodeOptions = ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 30, height: 30))
        let plain = try #require(manager.cacheKey(for: url, context: base))
        for field in ImageDecodeOptions.Field.allCases {
            var context = ImageContext()
            context.imageDecodeOptions = Self.changed(field)
            let key = try #require(manager.cacheKey(for: url, context: context))
            switch field.traits.key {
            case .part: #expect(key != plain, "\(field) is a key part but left the key \(key)")
            case .none, .bypass, .base: #expect(key == plain, "\(field) is not a key part but made \(key)")
            }
        }
    }

    @Test("encode options are a key part: each field, changed, makes another key")
    func encodeOptionsAreKeyParts() throws {
        let manager = ImageManager(cache: RecordingCache(), loader: ScriptedLoader())
        let url = URL(string: "https://h/a.png")!
        var base = ImageContext()
        base.imageEncodeOptions = ImageEncodeOptions()
        let plain = try #require(manager.cacheKey(for: url))
        let encoded = try #require(manager.cacheKey(for: url, context: base))
        #expect(encoded != plain && encoded.contains(" encode("))
        var keys: Set<String> = [encoded]
        for field in ImageEncodeOptions.Field.allCases {
            var options = ImageEncodeOptions()
            switch field {
            case .quality: options.quality = 0.5
            case .effort: options.effort = .best
            case .lossless: options.lossless = true
            case .progressive: options.progressive = true
            case .chromaSubsampling: options.chromaSubsampling = .s444
            case .maxPixelSize: options.maxPixelSize = PixelSize(width: 9, height: 9)
            case .maxFileSize: options.maxFileSize = 999
            case .perceptualTarget: options.perceptualTarget = PerceptualTarget(maxDistance: 1.5)
            case .firstFrameOnly: options.firstFrameOnly = true
            case .backgroundColor: options.backgroundColor = RGBAColor(red: 1, green: 2, blue: 3, alpha: 4)
            case .coderOptions: options.coderOptions[TestCoder.Tint.self] = 3
            }
            var context = ImageContext()
            context.imageEncodeOptions = options
            let key = try #require(manager.cacheKey(for: url, context: context))
            #expect(keys.insert(key).inserted, "\(field) left the key \(key)")
        }
    }

    @Test("the rules of a load follow from the active declarations")
    func rulesFollowTheDeclarations() {
        let plain = LoadTraits(options: [], context: ImageContext(), decodeOptions: ImageDecodeOptions())
        #expect(plain.active.isEmpty && plain.decodedImageServes && !plain.isolatesDownload)
        #expect(plain.isUniversalVerdict(ImageError(.badImageData, stage: .decode)))
        for field in ImageDecodeOptions.Field.allCases {
            let traits = LoadTraits(options: [], context: ImageContext(), decodeOptions: Self.changed(field))
            let declared = field.traits
            if declared.effects.contains(.pixels) && !declared.appliesToDecodedImage {
                #expect(!traits.decodedImageServes, "\(field) acts in the decoder")
            }
            if declared.mayChangeVerdict, declared.effects != [.scheduling] {
                #expect(!traits.isUniversalVerdict(ImageError(.badImageData, stage: .decode)), "\(field)")
            }
        }
        var modified = ImageContext()
        modified.downloadRequestModifier = BlockRequestModifier { $0 }
        let isolated = LoadTraits(options: [], context: modified, decodeOptions: ImageDecodeOptions())
        #expect(isolated.isolatesDownload && !isolated.isUniversalVerdict(.invalidDownloadStatusCode(404)))
        let cookies = LoadTraits(options: .handleCookies, context: ImageContext(), decodeOptions: ImageDecodeOptions())
        #expect(cookies.downloadFields == ["cookies"] && !cookies.isolatesDownload)
        var thumbnail = ImageContext()
        thumbnail.imageThumbnailPixelSize = PixelSize(width: 8, height: 8)
        let sized = LoadTraits(
            options: [], context: thumbnail,
            decodeOptions: ImageDecodeOptions(thumbnailPixelSize: PixelSize(width: 8, height: 8)))
        #expect(sized.decodedImageServes, "a thumbnail is made from decoded pixels")
        #expect(sized.isUniversalVerdict(.invalidDownloadStatusCode(404)), "a thumbnail fetches the same bytes")
        #expect(!sized.isUniversalVerdict(ImageError(.badImageData, stage: .decode)), "but decodes them otherwise")
    }

    @Test("ARCHITECTURE.md prints the catalog as it is (every built-in entry's row)")
    func architectureListsTheCatalog() throws {
        let page = try String(
            contentsOf: Self.sources.appendingPathComponent("../../ARCHITECTURE.md").standardizedFileURL,
            encoding: .utf8)
        let rows = OptionCatalog.markdownTable.components(separatedBy: "\n")
        let missing = rows.filter { !page.contains($0) && !$0.contains("com.example") }
        #expect(
            missing.isEmpty,
            "ARCHITECTURE.md lacks these rows of OptionCatalog.markdownTable:\n\(missing.joined(separator: "\n"))")
    }

    @Test("an undeclared plugin key gets a download of its own; a declared one follows its declaration")
    func pluginKeys() {
        let undeclared = ImageContextOption("com.example.undeclared.\(UUID().uuidString)")
        #expect(!undeclared.isDeclared && undeclared.traits.download == .isolates)
        let declared = ImageContextOption(
            "com.example.declared.\(UUID().uuidString)", traits: OptionTraits(.scheduling))
        #expect(declared.isDeclared && declared.traits == .scheduling)
        var context = ImageContext()
        context[declared] = 1
        #expect(!LoadTraits(options: [], context: context, decodeOptions: ImageDecodeOptions()).isolatesDownload)
        context[undeclared] = 1
        #expect(LoadTraits(options: [], context: context, decodeOptions: ImageDecodeOptions()).isolatesDownload)
    }

    @Test("an option declared to act only with a flag is active only beside it, built-in or plugin")
    func optionsThatActOnlyWithAFlag() {
        let limit = ContextSlot.imageScaleDownLimitBytes.traits
        #expect(limit.actsOnlyWith == .scaleDownLargeImages)
        #expect(limit.effects(with: []) == [] && limit.effects(with: .scaleDownLargeImages) == limit.effects)
        #expect(OptionCatalog.markdownTable.contains("only with scaleDownLargeImages"))
        let tuning = ImageContextOption(
            "com.example.tuning.\(UUID().uuidString)",
            traits: OptionTraits(.bytesFetched, download: .isolates, actsOnlyWith: .handleCookies))
        var context = ImageContext()
        context[tuning] = 1
        let alone = LoadTraits(options: [], context: context, decodeOptions: ImageDecodeOptions())
        #expect(alone.active.isEmpty && !alone.isolatesDownload)
        #expect(alone.isUniversalVerdict(.invalidDownloadStatusCode(404)))
        let beside = LoadTraits(options: .handleCookies, context: context, decodeOptions: ImageDecodeOptions())
        #expect(beside.isolatesDownload && beside.activeNames.contains(tuning.rawValue))
    }
}
