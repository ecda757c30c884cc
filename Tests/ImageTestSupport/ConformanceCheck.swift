import Foundation
import ImageCore

/// Checks one corpus row against a coder: the rules of `../shared/corpus/MANIFEST.md`.
public enum ConformanceCheck {
    /// The outcome of one row.
    public struct Outcome: Sendable, CustomStringConvertible {
        /// The row.
        public let row: CorpusExpectation
        /// True when the row's rule is met.
        public let passed: Bool
        /// What happened.
        public let detail: String
        /// True when the row is an APNG (several frames expected) that passed by decoding only its default image.
        public var decodedAPNGAsStill = false
        /// "PASS/FAIL folder/file: detail".
        public var description: String { "\(passed ? "PASS" : "FAIL") \(row): \(detail)" }
    }

    /// Checks every row with `check` and prints `conformance <folder>: passed/total` per folder, then
    /// `conformance <corpus> total: passed/total`; the caller records each outcome
    /// (`#expect(outcome.passed, "\(outcome)")`). APNG rows that passed as stills are counted on their folder's line.
    public static func checkAll(
        _ rows: [CorpusExpectation], corpus: String, _ check: (CorpusExpectation) -> Outcome
    ) -> [Outcome] {
        let outcomes = rows.map(check)
        let folders = Dictionary(grouping: outcomes, by: \.row.folder)
        for (folder, group) in folders.sorted(by: { $0.key < $1.key }) {
            let stills = group.filter(\.decodedAPNGAsStill).count
            let note = stills > 0 ? " (\(stills) APNG row(s) decoded as stills)" : ""
            print("conformance \(folder): \(group.filter(\.passed).count)/\(group.count)\(note)")
        }
        print("conformance \(corpus) total: \(outcomes.filter(\.passed).count)/\(rows.count)")
        return outcomes
    }

    /// Decode options used for conformance: raw orientation (sizes are as stored), every frame decoded.
    public static let options = ImageDecodeOptions(preloadAllFrames: true, applyOrientation: false)

    /// Decodes `row`'s file with `coder` (every frame) and applies the row's rule.
    ///
    /// - `ok`: decodes at width x height with `frames` frames (APNG may decode as 1 frame when the coder reads
    ///   only the default image; pass `acceptStillForAnimatedPNG`).
    /// - `reject`: throws an ``ImageError``.
    /// - `EITHER:`: a clean ``ImageError`` or a decode at the stated size.
    /// - `BOMB:`: throws ``ImageError/Code/imageTooLarge``.
    public static func check(
        _ row: CorpusExpectation, coder: any ImageCoder, options: ImageDecodeOptions = ConformanceCheck.options,
        acceptStillForAnimatedPNG: Bool = false
    ) -> Outcome {
        let data: Data
        do {
            data = try Data(contentsOf: row.url)
        } catch {
            return Outcome(row: row, passed: false, detail: "cannot read file: \(error)")
        }
        let result: Result<Image, any Error> = Result {
            let image = try CodersManager.decode(data, with: coder, options: options)
            for index in 0..<image.frameCount { _ = try image.frame(at: index) }
            return image
        }
        switch result {
        case .success(let image):
            let sizeOK = image.width == row.width && image.height == row.height
            let apngAsStill = acceptStillForAnimatedPNG && row.isAnimatedPNG && image.frameCount == 1
            let framesOK = image.frameCount == row.frames || apngAsStill
            let got = "decoded \(image.width)x\(image.height), \(image.frameCount) frame(s)"
            if row.isBomb { return Outcome(row: row, passed: false, detail: "bomb was decoded: \(got)") }
            if row.verdict == .ok || row.isEither {
                let passed = sizeOK && (framesOK || row.verdict == .reject)
                var outcome = Outcome(
                    row: row, passed: passed,
                    detail: passed
                        ? got + (apngAsStill ? " (APNG decoded as a still)" : "")
                        : "\(got), expected \(row.width)x\(row.height), \(row.frames) frame(s)")
                outcome.decodedAPNGAsStill = passed && apngAsStill
                return outcome
            }
            return Outcome(row: row, passed: false, detail: "expected rejection, \(got)")
        case .failure(let error):
            guard let imageError = error as? ImageError else {
                return Outcome(row: row, passed: false, detail: "non-ImageError thrown: \(error)")
            }
            if row.isBomb {
                let passed = imageError.code == .imageTooLarge
                return Outcome(row: row, passed: passed, detail: "\(imageError)")
            }
            let passed = row.verdict == .reject || row.isEither
            return Outcome(row: row, passed: passed, detail: "\(imageError)")
        }
    }
}
