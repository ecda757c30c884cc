import Crypto
import Foundation

/// File names of cache entries: the SHA-256 of the key in lowercase hex, plus the key's path extension when it
/// is 1 to 5 characters of `[a-z0-9]` (after lowercasing), so any key — with `/`, `..`, NUL, emoji or 10 KB
/// long — maps to a safe, fixed-length name inside the cache directory.
enum DiskFileNaming {
    static let maxExtensionLength = 5
    /// Prefix of in-flight temporary files; the sweep removes stale ones.
    static let temporaryPrefix = ".tmp-"

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The entry file name for `key`.
    static func fileName(forKey key: String) -> String {
        let digest = SHA256.hash(data: Data(key.utf8))
        let ext = pathExtension(of: key)
        let length = 64 + (ext.map { $0.utf8.count + 1 } ?? 0)
        return String(unsafeUninitializedCapacity: length) { buffer in
            var index = 0
            for byte in digest {
                buffer[index] = hexDigits[Int(byte >> 4)]
                buffer[index + 1] = hexDigits[Int(byte & 0x0f)]
                index += 2
            }
            if let ext {
                buffer[index] = UInt8(ascii: ".")
                index += 1
                for byte in ext.utf8 {
                    buffer[index] = byte
                    index += 1
                }
            }
            return index
        }
    }

    /// The extension of the key's path (query and fragment ignored), lowercased, when it is short and
    /// alphanumeric; nil otherwise.
    static func pathExtension(of key: String) -> String? {
        var path = Substring(key)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        if let slash = path.lastIndex(of: "/") { path = path[path.index(after: slash)...] }
        guard let dot = path.lastIndex(of: ".") else { return nil }
        let candidate = path[path.index(after: dot)...].utf8
        guard (1...maxExtensionLength).contains(candidate.count) else { return nil }
        var result: [UInt8] = []
        for byte in candidate {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): result.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): result.append(byte + 32)
            default: return nil
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// True when `name` has the shape of an entry file name.
    static func isEntryName(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        guard utf8.count >= 64 else { return false }
        for byte in utf8[0..<64] {
            guard
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            else { return false }
        }
        if utf8.count == 64 { return true }
        let ext = utf8[65...]
        guard utf8[64] == UInt8(ascii: "."), (1...maxExtensionLength).contains(ext.count) else { return false }
        return ext.allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
        }
    }

    /// A fresh temporary file name (random, so concurrent writers and processes never collide).
    static func temporaryName() -> String {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "")
        return temporaryPrefix + random
    }
}
