import Foundation
import ImageServiceQuery
import Testing

/// The service's HTTP dates: `Last-Modified`, `Date` and `Expires` it writes, `If-Modified-Since`, `Date` and
/// `Expires` it reads from clients and origins. Written and read without `DateFormatter` (ImageCore's
/// `HTTPDateFormat`); checked against Foundation's Gregorian calendar as the reference model.
@Suite struct HTTPDateTests {
    @Test func knownDates() {
        let cases: [(TimeInterval, String)] = [
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"), (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (951_825_600, "Tue, 29 Feb 2000 12:00:00 GMT"), (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
            (0.999, "Thu, 01 Jan 1970 00:00:00 GMT"), (-0.5, "Wed, 31 Dec 1969 23:59:59 GMT"),
            (4_102_444_800, "Fri, 01 Jan 2100 00:00:00 GMT"),
        ]
        for (seconds, text) in cases {
            #expect(HTTPDate.format(Date(timeIntervalSince1970: seconds)) == text)
        }
    }

    @Test func datesOutsideHeadersAreClamped() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -1e15)) == "Mon, 01 Jan 1601 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1e15)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(.distantFuture) == "Mon, 01 Jan 4001 00:00:00 GMT")  // in range: written as it is
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .infinity)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .nan)) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    /// The obsolete forms a recipient must accept (RFC 9110 §5.6.7), and hostile `If-Modified-Since` values (control
    /// bytes, non-ASCII, lone digits, a day that does not exist): each gives exactly the date or nil.
    @Test func obsoleteFormsAndHostileValues() {
        let reference = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == reference)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == reference)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 \u{FFFD}GMT\r\n") == reference)
        for text in ["", "\u{0}", "1", "\u{7F}\u{80}:", "0:0:0 0 Jan 1994", "If-Modified-Since: yesterday"] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }

    /// Property: every whole second of 1601…9999 is written as the calendar says (weekday included) and reads
    /// back to itself in all three forms a recipient accepts. Random seconds, seed printed.
    @Test func formatMatchesTheCalendarAndRoundTrips() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("formatMatchesTheCalendarAndRoundTrips seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let longWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        for index in 0..<3000 {
            // A third near the epoch (two-digit years and DST-free boundaries), the rest anywhere in range.
            let range: ClosedRange<Int> = index % 3 == 0 ? 0...3_155_759_999 : -11_644_473_600...253_402_300_799
            let seconds = Int.random(in: range, using: &generator)
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
            let (year, month, day) = (parts.year!, parts.month!, parts.day!)
            let time = "\(two(parts.hour!)):\(two(parts.minute!)):\(two(parts.second!))"
            let expected = "\(weekdays[parts.weekday! - 1]), \(two(day)) \(months[month - 1]) \(year) \(time) GMT"
            let text = HTTPDate.format(date)
            #expect(text == expected, "seed \(seed): \(seconds)")
            #expect(HTTPDate.parse(text) == date, "seed \(seed): \(text)")
            let asctimeDay = day < 10 ? " \(day)" : "\(day)"
            let asctime = "\(weekdays[parts.weekday! - 1]) \(months[month - 1]) \(asctimeDay) \(time) \(year)"
            #expect(HTTPDate.parse(asctime) == date, "seed \(seed): \(asctime)")
            if (1970...2069).contains(year) {
                let rfc850 =
                    "\(longWeekdays[parts.weekday! - 1]), \(two(day))-\(months[month - 1])-\(two(year % 100)) \(time) GMT"
                #expect(HTTPDate.parse(rfc850) == date, "seed \(seed): \(rfc850)")
            }
        }
    }
}
