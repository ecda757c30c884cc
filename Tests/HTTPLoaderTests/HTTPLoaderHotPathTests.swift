import Foundation
import ImageCore
import Synchronization
import Testing

@testable import HTTPLoader

/// The shortcuts of the per-request path (issue 23): each must give exactly what the plain code gave.
@Suite struct HTTPLoaderHotPathTests {
    // MARK: Header parsing: the byte-level fast paths against the Substring versions they replace

    /// Values that exercise blanks, case, parameters, quotes, non-ASCII, digits and lengths at the limits.
    static let values: [String] = {
        var values = [
            "", " ", "\t", " \t ", "image/png", "Image/PNG", " image/png ", "\timage/png\t", "image/png; q=1",
            " \tImage/WebP ; q=1", "; image/png", "image/pngé", "IMAGE/PNGÉ ", "image/png;", "a;b;c", "\"abc\"",
            " W/\"abc\" ", "W/\"abc\"", "\"\"", "\"", "W/", "W/\"", "legacy-unquoted", "\"a\"b\"", "\"a b\"", "\"abc",
            "\"a\r\nX: 1\"", "\"\u{7F}\"", "\"é\"", "0", "123", " 123 ", "\t42\t", "-1", "12, 12", "+5", "1e3",
            "123456789012345678", "1234567890123456789", "000000000000000042", "99999999999999999999999", "٣",
            "\"" + String(repeating: "a", count: 1022) + "\"", "\"" + String(repeating: "a", count: 1023) + "\"",
        ]
        // Random strings over an alphabet that hits every branch.
        let alphabet = Array(" \t;\"W/aZ09é\u{7F}!#,-")
        var generator = SplitMix(seed: 0x5EED_2023)
        for _ in 0..<2000 {
            let length = Int(generator.next(upTo: 12))
            values.append(String((0..<length).map { _ in alphabet[Int(generator.next(upTo: UInt64(alphabet.count)))] }))
        }
        return values
    }()

    @Test func fastParsersAgreeWithTheSubstringParsers() {
        for value in Self.values {
            #expect(
                HTTPResponseParsing.contentType(value) == HTTPResponseParsing.genericContentType(value),
                "content type of \(value.debugDescription)")
            #expect(
                HTTPResponseParsing.contentLength(value) == HTTPResponseParsing.genericContentLength(value),
                "content length of \(value.debugDescription)")
            #expect(
                HTTPResponseParsing.entityTag(value) == HTTPResponseParsing.genericEntityTag(value),
                "entity tag of \(value.debugDescription)")
        }
    }

    /// The five fields the metadata reads are found whatever the case of their names.
    @Test func metadataFindsItsFieldsInAnyCase() {
        let shouted = HTTPResponseParsing.metadata(
            statusCode: 200,
            headers: [
                (name: "CONTENT-TYPE", value: "image/png"), (name: "ETAG", value: "\"x\""),
                (name: "LAST-MODIFIED", value: "Sun, 06 Nov 1994 08:49:37 GMT"),
                (name: "CACHE-CONTROL", value: "max-age=9"), (name: "CONTENT-LENGTH", value: "7"),
            ], url: nil)
        #expect(shouted.contentType == "image/png" && shouted.etag == "\"x\"" && shouted.maxAge == 9)
        #expect(shouted.lastModified == "Sun, 06 Nov 1994 08:49:37 GMT" && shouted.expectedContentLength == 7)
        #expect(
            Set(shouted.headers.keys) == ["content-type", "etag", "last-modified", "cache-control", "content-length"])
    }

    @Test func metadataReadsTheJoinedValueOfARepeatedField() {
        let response = HTTPResponseParsing.metadata(
            statusCode: 200,
            headers: [
                (name: "Content-Length", value: "10"), (name: "ETag", value: "\"a\""),
                (name: "Last-Modified", value: "Sun, 06 Nov 1994 08:49:37 GMT"), (name: "content-length", value: "10"),
                (name: "Content-Type", value: "Image/PNG"), (name: "Cache-Control", value: "max-age=60"),
                (name: "cache-control", value: "no-store"), (name: "X-Other", value: "1"),
            ], url: nil)
        // Every field is read from what the dictionary holds: a repeated one joined with ", ".
        #expect(response.headers["content-length"] == "10, 10")
        #expect(response.expectedContentLength == nil)
        #expect(response.etag == "\"a\"")
        #expect(response.contentType == "image/png")
        #expect(response.headers["cache-control"] == "max-age=60, no-store")
        #expect(response.maxAge == 0)
        #expect(response.lastModified == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(response.headers.count == 6)

        let single = HTTPResponseParsing.metadata(
            statusCode: 200, headers: [(name: "Content-Length", value: " 42 "), (name: "ETag", value: "W/\"b\"")],
            url: nil)
        #expect(single.expectedContentLength == 42)
        #expect(single.etag == "W/\"b\"")
        #expect(single.maxAge == nil && single.contentType == nil && single.lastModified == nil)
    }

    // MARK: Status shortcuts

    @Test func statusRulesAnswerAsTheirSetsDo() {
        let rules: [Set<Int>] = [Set(200..<300), [200], Set(200..<300).union([404]), Set(201..<300), []]
        for codes in rules {
            let validator = ResponseValidator(statusCodes: codes, contentTypes: nil)
            for status in 0..<700 {
                let response = ResponseMetadata(statusCode: status)
                // A 206 is an image only with a Content-Range of the whole representation (none here).
                let accepted = status == 304 || (codes.contains(status) && status != 206)
                #expect((validator.error(for: response) == nil) == accepted, "\(status) with \(codes.sorted())")
            }
            let whole = ResponseMetadata(statusCode: 206, headers: ["content-range": "bytes 0-9/10"])
            #expect((validator.error(for: whole) == nil) == codes.contains(206), "206 whole with \(codes.sorted())")
        }
        for status in -1..<700 {
            #expect(RedirectPolicy.isRedirect(status) == RedirectPolicy.redirectStatuses.contains(status))
        }
    }

    // MARK: The transfer key's cached hash

    static func key(
        method: String = "GET", url: String = "http://a/x.png", headers: [String] = ["accept:image/*"],
        insecure: Bool = false, handleCookies: Bool = false, cookiePartition: String? = nil,
        deadline: UInt64 = .max, privateTo: UInt64? = nil
    ) -> TransferRequest.Key {
        TransferRequest.Key(
            method: method, url: url, headers: headers, insecure: insecure, handleCookies: handleCookies,
            cookiePartition: cookiePartition, deadline: deadline, privateTo: privateTo)
    }

    @Test func keysWithEqualFieldsAreEqualAndHashAlike() {
        let a = Self.key(url: "http://a/" + String(repeating: "p", count: 40))
        let b = Self.key(url: "http://a/" + String(repeating: "p", count: 40))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
    }

    @Test func keysThatDifferInAnyFieldDiffer() {
        let base = Self.key()
        let others = [
            Self.key(method: "HEAD"), Self.key(url: "http://a/y.png"), Self.key(headers: ["accept:image/png"]),
            Self.key(headers: []), Self.key(insecure: true), Self.key(handleCookies: true),
            Self.key(cookiePartition: "t1"), Self.key(deadline: 5_000_000_000), Self.key(privateTo: 7),
        ]
        for other in others { #expect(other != base, "\(other)") }
        var map: [TransferRequest.Key: Int] = [base: -1]
        for (index, other) in others.enumerated() { map[other] = index }
        #expect(map.count == others.count + 1)
        #expect(map[Self.key()] == -1)
    }

    // MARK: Callers: the first inline, later ones in a dictionary

    static func caller(_ marker: Int, into log: LockedLog) -> Transfer.Caller {
        Transfer.Caller(
            progress: nil, completion: { _ in log.append(marker) }, responseModifier: nil, decryptor: nil,
            headerCheck: nil, requestedURL: "https://h/\(marker)")
    }

    @Test func callersAreFoundReplacedAndRemovedWhereverTheyAreKept() {
        let log = LockedLog()
        var callers = TransferCallers()
        #expect(callers.count == 0 && callers[1] == nil)
        callers[1] = Self.caller(1, into: log)
        callers[2] = Self.caller(2, into: log)
        callers[3] = Self.caller(3, into: log)
        #expect(callers.count == 3)
        callers[2] = Self.caller(20, into: log)  // replaces the one kept in the dictionary
        callers[1] = Self.caller(10, into: log)  // replaces the inline one
        #expect(callers.count == 3)
        for id: UInt64 in [1, 2, 3] { callers[id]?.completion(.failure(.cancelled(stage: .download))) }
        #expect(log.values == [10, 20, 3])
        #expect(callers.removeValue(forKey: 1) != nil)
        #expect(callers.removeValue(forKey: 1) == nil)
        #expect(callers[1] == nil && callers[3] != nil)
        callers[4] = Self.caller(4, into: log)  // takes the free inline place
        callers[3] = nil
        #expect(callers.count == 2 && callers[3] == nil)
        #expect(callers.removeValue(forKey: 9) == nil)
        #expect(callers.removeValue(forKey: 2) != nil && callers.removeValue(forKey: 4) != nil)
        #expect(callers.count == 0)
    }
}

/// Markers appended from callbacks, in order.
final class LockedLog: Sendable {
    private let storage = Mutex<[Int]>([])
    func append(_ value: Int) { storage.withLock { $0.append(value) } }
    var values: [Int] { storage.withLock { $0 } }
}
