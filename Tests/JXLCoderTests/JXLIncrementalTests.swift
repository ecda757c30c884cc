import Foundation
import ImageCore
import ImageTestSupport
import JXLCoder
import Testing

/// Progressive loading: previews from libjxl's progressive steps while bytes arrive, the full decode once final.
@Suite struct JXLIncrementalTests {
    @Test func progressiveFilesPreviewBeforeTheyAreComplete() throws {
        var spec = JXLTestFiles.Spec()
        // Several 256x256 groups, so the DC and AC passes come in separate sections libjxl can report.
        spec.width = 1024
        spec.height = 768
        spec.channels = 3
        spec.lossless = false
        spec.progressive = true
        spec.texture = true
        let data = JXLTestFiles.make(spec)
        let full = try JXLCoder.shared.decode(data, options: ImageDecodeOptions())
        let decoder = JXLCoder.shared.makeIncrementalDecoder(options: ImageDecodeOptions())
        var previews = 0
        var firstPreviewAt: Int?
        for end in stride(from: 0, to: data.count, by: max(1, data.count / 40)) {
            decoder.update(data.prefix(end), isFinal: false)
            if let image = try decoder.currentImage() {
                #expect(image.metadata.isPartial, "a preview before the bytes are final is partial")
                #expect(image.width == 1024 && image.height == 768)
                previews += 1
                firstPreviewAt = firstPreviewAt ?? end
            }
        }
        #expect(previews > 0, "libjxl showed a progressive step")
        #expect((firstPreviewAt ?? data.count) < data.count * 3 / 4, "the first preview came early")
        decoder.update(data, isFinal: true)
        let final = try #require(try decoder.currentImage())
        #expect(!final.metadata.isPartial)
        #expect(final.pixels == full.pixels)
    }

    @Test func throughTheRegistryAndPreviewsOfAStillComeAtTheEnd() throws {
        let data = JXLTestFiles.make(JXLTestFiles.Spec())
        let coders = CodersManager(coders: [JXLCoder.shared])
        #expect(coders.canIncrementallyDecode(data.prefix(2)))
        let decoder = coders.makeIncrementalDecoder(options: ImageDecodeOptions())
        decoder.update(data.prefix(data.count / 2), isFinal: false)
        if let preview = try decoder.currentImage() { #expect(preview.metadata.isPartial) }
        decoder.update(data, isFinal: true)
        #expect(
            try decoder.currentImage()?.pixels == JXLCoder.shared.decode(data, options: ImageDecodeOptions()).pixels)
    }
}
