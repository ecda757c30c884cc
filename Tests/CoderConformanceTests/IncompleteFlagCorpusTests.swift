import AVIFCoder
import Foundation
import GIFCoder
import HEIFCoder
import ImageCore
import ImageTestSupport
import JPEGCoder
import JXLCoder
import PNGCoder
import Testing
import WebPCoder

/// Issue 32, defect 12, on the shared corpora: ``ImageMetadata/isIncomplete`` marks exactly the `ok` files whose
/// bytes end before their end marker (JPEG EOI, PNG IEND, GIF trailer: ``EndMarkerReference``); no complete file
/// is marked. The flagged files are all hostile ones (fuzzer outputs and cut files the references decode too) and
/// are printed.
@Suite(.enabled(if: Corpus.shouldRun, "needs the conformance corpus ($IMAGE_CORPUS or ../shared/corpus)"))
struct IncompleteFlagCorpusTests {
    @Test func onlyFilesThatEndEarlyAreMarkedIncomplete() throws {
        var rows = try Corpus.requireExpectations()
        for sibling in [SiblingCorpus.apng, SiblingCorpus.jxl] where sibling.isAvailable {
            rows += try sibling.requireExpectations()
        }
        rows += AVIFCorpus.expectations() + HEICCorpus.expectations()
        let coders = CodersManager(coders: [
            PNGCoder.shared, JPEGCoder.shared, WebPCoder.shared, GIFCoder.shared, AVIFCoder.shared, HEIFCoder.shared,
            JXLCoder.shared,
        ])
        var flagged: [String] = []
        var decoded = 0
        for row in rows where row.verdict == .ok {
            let data = try Data(contentsOf: row.url)
            guard let image = try? coders.decode(data, options: ImageDecodeOptions()) else { continue }
            decoded += 1
            let endsEarly = EndMarkerReference.endsEarly(data) ?? false
            if image.metadata.isIncomplete { flagged.append(row.description) }
            #expect(
                image.metadata.isIncomplete == endsEarly,
                "\(row): marked incomplete \(image.metadata.isIncomplete), ends before its end marker \(endsEarly)")
            #expect(!image.metadata.isPartial, "\(row): a decode is never a preview")
        }
        let ok = rows.filter { $0.verdict == .ok }.count
        print("isIncomplete on the corpora: \(flagged.count) of \(decoded) decoded ok files (of \(ok)): \(flagged)")
        #expect(decoded * 10 >= ok * 9, "the corpora's ok files decode (EITHER rows may fail)")
        #expect(flagged.allSatisfy { $0.hasPrefix("hostile/") }, "only hostile files may end early")
    }
}
