import HTTPTypes
import ImageService
import Testing

/// What every adapter refuses before the service (``FramingRefusal``): stated once, judged the same by both.
@Suite struct FramingRefusalTests {
    @Test("Host exactly once on HTTP/1.1; transfer codings: chunked once or none")
    func refusals() {
        func judge(_ isHTTP11: Bool, _ hosts: Int, _ codings: [String]) -> FramingRefusal? {
            FramingRefusal(isHTTP11: isHTTP11, hostFields: hosts, transferCodings: codings)
        }
        #expect(judge(true, 1, []) == nil)
        #expect(judge(true, 1, ["chunked"]) == nil)
        #expect(judge(true, 1, [" Chunked "]) == nil, "case and padding are not the coding")
        #expect(judge(false, 0, []) == nil, "HTTP/1.0 (and HTTP/2) may go without Host")
        #expect(judge(true, 0, []) == .hostNotOnce)
        #expect(judge(true, 2, ["chunked"]) == .hostNotOnce)
        #expect(judge(true, 1, ["gzip", "chunked"]) == .unknownTransferCoding)
        #expect(judge(false, 0, ["identity"]) == .unknownTransferCoding)
        #expect(judge(true, 1, ["chunked", "chunked"]) == .chunkedTwice)
        #expect(FramingRefusal.unknownTransferCoding.status == .notImplemented)
        #expect(FramingRefusal.hostNotOnce.status == .badRequest)
        #expect(FramingRefusal.chunkedTwice.status == .badRequest)
        let response = FramingRefusal.chunkedTwice.response
        #expect(response.status == .badRequest)
        #expect(response.headers[.connection] == "close")
        #expect(response.headers[.contentLength] == "0")
        #expect(response.body.isEmpty)
    }
}
