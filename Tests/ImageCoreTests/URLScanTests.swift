import Foundation
import Testing

@testable import ImageCore

/// Keys end in the URL's short extension and loads check the URL has a scheme; both are read from the absolute
/// string without Foundation's component parsing. The answers must be Foundation's, for every URL shape.
@Suite struct URLScanTests {
    static let schemes = ["https", "http", "HTTPS", "test", "file", "data", "x", "a1+.-"]
    static let authorities = ["//h", "//u:p@h.example:80", "//[::1]", "//h.com", ""]
    static let paths = [
        "", "/", "/a", "/a.png", "/a.PNG", "/a..png", "/.png", "/.a.png", "/a.png/", "/dir.d/file", "/a%2Epng",
        "/a.p%6Eg", "/a.png;v=1", "/a;v=1/b.png", "/a.tar.gz", "/a.jpeg2000", "/a.j-g", "/a.", "/a.png.", "//a.png",
        "/a/./b.png", "/a/../b.png", "/a.png/.", "/a/..", "/%E2%82%AC.png", "/a%20.png", "/a.p%20g", "a.png",
        "image/png;base64,AAAA", "/photos/12345.jpg", "/a.webp", "/A.JpEg", "/a~.png", "/a_b.avif", "/a.1",
        "/..png", "/...jpeg", "/b/..webp", "/..", "/.a..png", "/..9.JPG", "/.-.png",
    ]
    static let queries = ["", "?x=1.jpg", "?", "?a/b.png#c.gif"]
    static let fragments = ["", "#f.webp", "#"]

    static func urls() -> [URL] {
        var urls: [URL] = []
        for scheme in schemes {
            for authority in authorities {
                for path in paths {
                    for query in queries {
                        for fragment in fragments {
                            if let url = URL(string: scheme + ":" + authority + path + query + fragment) {
                                urls.append(url)
                            }
                        }
                    }
                }
            }
        }
        return urls
    }

    @Test func theScannedExtensionIsFoundations() {
        let urls = Self.urls()
        #expect(urls.count > 3000)
        var scanned = 0
        for url in urls {
            let absolute = url.absoluteString
            let expected = URLScan.foundationShortExtension(of: url)
            #expect(URLScan.shortExtension(of: url, absoluteString: absolute) == expected, "\(absolute)")
            // The load's path: the scheme's end found once, then handed to the extension scan.
            let schemeEnd = URLScan.plainSchemeEnd(url, absoluteString: absolute)
            #expect(
                URLScan.shortExtension(of: url, absoluteString: absolute, schemeEnd: schemeEnd) == expected,
                "\(absolute)")
            if case .decided(let ext) = URLScan.scanShortExtension(absolute) {
                scanned += 1
                #expect(ext == expected, "\(absolute)")
            }
        }
        #expect(scanned > urls.count / 2, "the scan decides the common shapes itself")
    }

    /// Every last path component of up to six characters over an alphabet of the bytes the scan treats apart
    /// (a listed table missed `....jpg`, which Foundation reads as having an extension, and a key lost its `.jpg`).
    @Test func everyShortLastComponentScansAsFoundationReadsIt() {
        let alphabet: [Character] = [".", "a", "P", "-", "("]
        var components = [""]
        var all: [String] = []
        for _ in 1...6 {
            components = components.flatMap { prefix in alphabet.map { prefix + String($0) } }
            all += components
        }
        var checked = 0
        for component in all {
            for suffix in ["", ".png", ".JPG", "."] {
                guard let url = URL(string: "https://h/d/" + component + suffix) else { continue }
                let absolute = url.absoluteString
                checked += 1
                #expect(
                    URLScan.shortExtension(of: url, absoluteString: absolute)
                        == URLScan.foundationShortExtension(of: url), "\(absolute)")
            }
        }
        #expect(checked > 50_000)
    }

    @Test func theSchemeCheckIsFoundations() {
        var strings = Self.urls().map(\.absoluteString)
        strings += ["a.png", "/a.png", "C:/x.png", "//h/a.png", "?q", "#f", "a+b:c", "1a:b"]
        // Near misses of the http(s) shortcut: case, a fifth letter, too short to hold it, a byte one bit away.
        strings += [
            "HTTP://h/a.png", "hTtPs://h/a", "httpx://h/a.png", "https2:x", "http:", "https:", "http:x", "httpS:/a",
            "http+s://h", "htt:p", "hxtp://h", "(ttp://h", "http%3A//h",
        ]
        for string in strings {
            guard let url = URL(string: string) else { continue }
            #expect(URLScan.hasScheme(url, absoluteString: url.absoluteString) == (url.scheme != nil), "\(string)")
        }
    }

    @Test func relativeURLsAskFoundation() throws {
        let base = try #require(URL(string: "https://h/dir/"))
        for relative in ["b.png?q", "../c.JPG", "d", "e.png/"] {
            let url = try #require(URL(string: relative, relativeTo: base))
            #expect(
                URLScan.shortExtension(of: url, absoluteString: url.absoluteString)
                    == URLScan.foundationShortExtension(of: url), "\(relative)")
            #expect(URLScan.hasScheme(url, absoluteString: url.absoluteString) == (url.scheme != nil))
        }
    }

    @Test func keysKeepTheirDocumentedFormat() {
        let manager = ImageManager(cache: CachesManager(), loader: LoadersManager())
        var context = ImageContext()
        context.imageTransformer = BlockTransformer(key: "resize(100x100,aspectFit,lanczos3)") { image, _ in image }
        context.imageThumbnailPixelSize = PixelSize(width: 256, height: 256)
        let key = manager.cacheKey(for: URL(string: "https://h/a.PNG?v=2#x")!, context: context)
        #expect(
            key == "https://h/a.PNG?v=2#x thumbnail(256x256,fit) transform(resize(100x100,aspectFit,lanczos3))"
                + " .png")
        let noExtension = manager.cacheKey(for: URL(string: "https://h/a")!, context: context)
        #expect(noExtension == "https://h/a thumbnail(256x256,fit) transform(resize(100x100,aspectFit,lanczos3))")
        #expect(manager.cacheKey(for: URL(string: "https://h/a.png")!) == "https://h/a.png")
    }
}
