import Foundation
import ImageCore
import Testing

@Suite struct ImageFormatTests {
    private func detect(_ bytes: [UInt8]) -> ImageFormat? { ImageFormat.detect(Data(bytes)) }

    @Test func detectsEveryBuiltInFormatFromItsFullSignature() {
        #expect(detect([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0]) == .png)
        #expect(detect([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]) == .jpeg)
        #expect(detect(Array("GIF89a".utf8) + [1, 0]) == .gif)
        #expect(detect(Array("GIF87a".utf8) + [1, 0]) == .gif)
        #expect(detect(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8)) == .webp)
        #expect(detect([0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]) == .tiff)
        #expect(detect([0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]) == .tiff)
        #expect(
            detect(Array("BM".utf8) + [0x36, 0, 0, 0, 0, 0, 0, 0, 0x36] + [UInt8](repeating: 0, count: 20)) == .bmp)
        #expect(detect([0xFF, 0x0A, 0xFA]) == .jxl)
        #expect(detect([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) == .jxl)
        #expect(detect(Array("%PDF-1.7\n".utf8)) == .pdf)
        #expect(detect([0, 0, 1, 0, 1, 0, 16, 16] + [UInt8](repeating: 0, count: 16)) == .ico)
        #expect(detect(Array("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8)) == .svg)
    }

    @Test func distinguishesHEIFFamilyByBrand() {
        func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
            let size = 16 + 4 * compatible.count
            var bytes: [UInt8] = [0, 0, 0, UInt8(size)] + Array("ftyp".utf8) + Array(major.utf8) + [0, 0, 0, 0]
            for brand in compatible { bytes += Array(brand.utf8) }
            return bytes
        }
        #expect(detect(ftyp("avif", ["mif1", "miaf"])) == .avif)
        #expect(detect(ftyp("heic", ["mif1", "heic"])) == .heic)
        #expect(detect(ftyp("mif1", ["mif1", "heic"])) == .heic)
        #expect(detect(ftyp("mif1", ["mif1"])) == .heif)
        #expect(detect(ftyp("isom", ["mp41"])) == nil)
    }

    @Test func neverDecidesFromOneByte() {
        #expect(detect([0x89]) == nil)
        #expect(detect([0xFF, 0xD8]) == nil)
        #expect(detect(Array("GIF8".utf8)) == nil)
        #expect(detect(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8)) == nil)
        #expect(detect([0x89, 0x50, 0x4E, 0x47, 0, 0, 0, 0]) == nil)
        #expect(detect([]) == nil)
        #expect(detect(Array("hello <svg".utf8)) == nil)
    }

    @Test func pluginsCanAddFormats() {
        let qoi = ImageFormat(rawValue: "qoi")
        #expect(qoi != .png)
        #expect(qoi.fileExtension == "qoi")
        #expect(qoi.mimeType == nil)
        #expect(ImageFormat.jpeg.fileExtension == "jpg")
        #expect(ImageFormat.webp.mimeType == "image/webp")
    }
}
