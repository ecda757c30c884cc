import Foundation

/// The header of a binary PPM ("P6") file: `P6 <width> <height> <maxval>` separated by whitespace, `#` comments
/// allowed between the fields, then exactly one whitespace byte before the samples.
struct PPMHeader: Hashable, Sendable {
    let width: Int
    let height: Int
    /// The largest sample value, 1...65535; above 255 each sample takes two bytes (big-endian).
    let maxValue: Int
    /// Where the samples start in the file.
    let pixelOffset: Int

    var bytesPerSample: Int { maxValue < 256 ? 1 : 2 }

    /// Parses the header at the start of `data`; nil when it is not a complete, well-formed P6 header.
    init?(_ data: Data) {
        guard let header = data.withUnsafeBytes({ Self.parse($0) }) else { return nil }
        self = header
    }

    private init(width: Int, height: Int, maxValue: Int, pixelOffset: Int) {
        self.width = width
        self.height = height
        self.maxValue = maxValue
        self.pixelOffset = pixelOffset
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) -> PPMHeader? {
        // The magic is "P6" plus a whitespace byte: two bytes alone would also match text files.
        guard bytes.count >= 3, bytes[0] == UInt8(ascii: "P"), bytes[1] == UInt8(ascii: "6"), isSpace(bytes[2])
        else { return nil }
        var index = 2
        func number() -> Int? {
            while index < bytes.count {
                if isSpace(bytes[index]) {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "#") {
                    while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
                } else {
                    break
                }
            }
            var value = 0
            var digits = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                digits += 1
                index += 1
                if digits > 9 { return nil }  // refuse absurd sizes before they can overflow anything
            }
            return digits > 0 ? value : nil
        }
        guard let width = number(), let height = number(), let maxValue = number(), (1...65535).contains(maxValue),
            index < bytes.count, isSpace(bytes[index])
        else { return nil }
        return PPMHeader(width: width, height: height, maxValue: maxValue, pixelOffset: index + 1)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C
    }
}
