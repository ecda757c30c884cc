import Foundation

/// Reads and writes the dates of HTTP headers: `Expires` of cookies, `Last-Modified`, `Date`.
///
/// Parsing uses the lenient algorithm of RFC 6265 §5.1.1, which accepts the three formats of RFC 9110 (IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, asctime
/// `Sun Nov  6 08:49:37 1994`) and the variants servers send in cookies (`Wed, 21-Oct-2015 07:28:00 GMT`).
/// All dates are UTC. No `DateFormatter`: slow to create, locale-dependent, and swift-corelibs-foundation's leaks
/// a character set on some inputs (the thumbnail-query fuzz target found it through `If-Modified-Since`); total on
/// any input, never traps. Formatting writes IMF-fixdate, the only form a sender may generate (RFC 9110 §5.6.7),
/// by hand for the same reasons; `format` and `parse` round-trip every whole second from 1601 to 9999.
/// `HTTPLoader.HTTPDate` and `ImageServiceQuery.HTTPDate` both forward here.
package enum HTTPDateFormat {
    /// The date in `text`, or nil when it is not one (missing parts, a day that does not exist, a year before 1601).
    package static func parse(_ text: String) -> Date? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        var utf8 = Array(text.utf8.prefix(256))
        utf8.append(0x20)  // a final delimiter ends the last token
        var start: Int?
        for index in utf8.indices {
            if isDelimiter(utf8[index]) {
                if let tokenStart = start {
                    let token = utf8[tokenStart..<index]
                    if time == nil, let parsed = parseTime(token) {
                        time = parsed
                    } else if day == nil, let value = leadingDigits(token, min: 1, max: 2) {
                        day = value
                    } else if month == nil, let value = parseMonth(token) {
                        month = value
                    } else if year == nil, let value = leadingDigits(token, min: 2, max: 4) {
                        year = value
                    }
                    start = nil
                }
            } else if start == nil {
                start = index
            }
        }
        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59,
            day <= daysIn(month: month, year: year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// `date` as IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), truncated to the whole second. Dates outside
    /// years 1601…9999 are clamped to them: a header never carries a five-digit or pre-Gregorian year.
    package static func format(_ date: Date) -> String {
        let lowest = -11_644_473_600  // 1601-01-01T00:00:00Z
        let highest = 253_402_300_799  // 9999-12-31T23:59:59Z
        let raw = date.timeIntervalSince1970
        let seconds = raw.isNaN ? 0 : Int(min(max(raw.rounded(.down), Double(lowest)), Double(highest)))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilFromDays(days)
        let weekday = ((days % 7) + 7 + 4) % 7  // 1970-01-01 was a Thursday (index 4 from Sunday)
        var text = ""
        text.reserveCapacity(29)
        text += weekdays[weekday]
        text += ", "
        text += twoDigits(day)
        text += " "
        text += monthNames[month - 1]
        text += " "
        text += String(year)
        text += " "
        text += twoDigits(secondOfDay / 3600)
        text += ":"
        text += twoDigits(secondOfDay / 60 % 60)
        text += ":"
        text += twoDigits(secondOfDay % 60)
        text += " GMT"
        return text
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte)
            || (0x7B...0x7E).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// `min`…`max` digits at the start of `token`, followed by a non-digit or the end.
    private static func leadingDigits(_ token: ArraySlice<UInt8>, min: Int, max: Int) -> Int? {
        var value = 0
        var count = 0
        for byte in token {
            guard isDigit(byte) else { break }
            count += 1
            guard count <= max else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return count >= min ? value : nil
    }

    /// time = hms-time ( non-digit *OCTET ); hms-time = 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT
    private static func parseTime(_ token: ArraySlice<UInt8>) -> (Int, Int, Int)? {
        var parts: [Int] = []
        var rest = token
        while parts.count < 3 {
            guard let value = leadingDigits(rest, min: 1, max: 2) else { return nil }
            parts.append(value)
            rest = rest.drop(while: isDigit)
            if parts.count < 3 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        return (parts[0], parts[1], parts[2])
    }

    private static let months = monthNames.map { $0.lowercased() }

    private static func parseMonth(_ token: ArraySlice<UInt8>) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3).map { $0 | 0x20 }, as: UTF8.self)
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 (H. Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The civil date of `days` since 1970-01-01 (H. Hinnant's `civil_from_days`, the inverse of the above).
    private static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
