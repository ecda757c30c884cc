import Foundation
import ImageCore
import Testing

extension ImageContextOption {
    fileprivate static let pluginFlag = ImageContextOption("com.example.pluginFlag")
}

@Suite struct ImageContextTests {
    @Test func typedAccessorsRoundTrip() {
        var context = ImageContext()
        context.imageThumbnailPixelSize = PixelSize(width: 10, height: 20)
        context.storeCacheType = .disk
        context.imageScaleDownLimitBytes = 1000
        #expect(context.imageThumbnailPixelSize == PixelSize(width: 10, height: 20))
        #expect(context.storeCacheType == .disk)
        #expect(context.imageScaleDownLimitBytes == 1000)
        context.imageThumbnailPixelSize = nil
        #expect(!context.contains(.imageThumbnailPixelSize))
    }

    @Test func pluginsAddTheirOwnKeys() {
        var context = ImageContext()
        context[.pluginFlag] = 42
        #expect(context.value(.pluginFlag, as: Int.self) == 42)
        #expect(context.value(.pluginFlag, as: String.self) == nil)
    }

    @Test func explicitNoneIsPresentButEmpty() {
        var context = ImageContext()
        context.setExplicitNone(.imageTransformer)
        #expect(context.contains(.imageTransformer))
        #expect(context.isExplicitNone(.imageTransformer))
        #expect(context.imageTransformer == nil)
        let merged = context.merging(
            defaults: ImageContext([.imageTransformer: BlockTransformer(key: "x") { i, _ in i }]))
        #expect(merged.imageTransformer == nil)
    }

    @Test func mergingKeepsOwnValues() {
        let own = ImageContext([.storeCacheType: ImageCacheType.memory])
        let merged = own.merging(
            defaults: ImageContext([.storeCacheType: ImageCacheType.disk, .queryCacheType: ImageCacheType.disk]))
        #expect(merged.storeCacheType == .memory)
        #expect(merged.queryCacheType == .disk)
    }
}
