import Foundation
import Synchronization

/// File names of cache entries, format version 2: `v2-`, the BLAKE3 of the whole key in lowercase hex, plus the
/// key's path extension when it is 1 to 5 characters of `[a-z0-9]` (after lowercasing), so any key — with `/`,
/// `..`, NUL, emoji or 10 KB long — maps to a safe, fixed-length name inside the cache directory.
///
/// The digest is collision-resistant, so two distinct keys never share a name (an entry file also records its
/// key, and a read of another key's file is a miss). The version is in the name and in the hash's key: entries
/// of format version 1 (`<SHA-256 hex>[.ext]`, written under the old, non-injective cache-key format) are never
/// looked up — a clean miss — and sweeps in a directory the cache owns remove them (``isLegacyEntryName(_:)``).
enum DiskFileNaming {
    /// The naming and entry-format version; bump it (with the prefix and the hash key) to orphan every entry.
    static let version = 2
    static let prefix: [UInt8] = Array("v2-".utf8)
    static let maxExtensionLength = 5
    /// Prefix of in-flight temporary files; the sweep removes stale ones (``isTemporaryName(_:)``).
    static let temporaryPrefix = ".tmp-"
    /// BLAKE3 key of version-2 names: 32 ASCII bytes.
    private static let hashKey = BLAKE3.keyWords(Array("webimage disk cache file name v2".utf8))

    /// The entry file name for `key`.
    static func fileName(forKey key: String) -> String { entryName(forKey: key).fileName }

    /// The compact name of the entry for `key` (hashes the key once, on the stack).
    static func entryName(forKey key: String) -> DiskEntryName {
        var key = key
        return key.withUTF8 { utf8 in
            let digest = BLAKE3.keyedHash(UnsafeRawBufferPointer(utf8), key: hashKey)
            var packed: UInt64 = 0
            if let range = pathExtensionRange(of: utf8) {
                for (shift, position) in range.enumerated() {
                    let byte = utf8[position]
                    let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
                    packed |= UInt64(lower) << (8 * UInt64(shift))
                }
            }
            return DiskEntryName(
                d0: UInt64(digest.0) | UInt64(digest.1) << 32, d1: UInt64(digest.2) | UInt64(digest.3) << 32,
                d2: UInt64(digest.4) | UInt64(digest.5) << 32, d3: UInt64(digest.6) | UInt64(digest.7) << 32,
                ext: packed)
        }
    }

    /// Writes the file name of `name` (the prefix, 64 hex digits of the digest's bytes in order, then `.` and
    /// the extension if any) at `buffer`; returns the number of bytes written (at most
    /// ``DiskEntryName/maxFileNameLength``).
    static func writeFileName(_ name: DiskEntryName, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var index = 0
        for byte in prefix {
            buffer[index] = byte
            index += 1
        }
        let raw = UnsafeMutableRawPointer(buffer.baseAddress!)
        func appendHex(_ word: UInt64) {
            raw.storeBytes(
                of: hexDigits(UInt32(truncatingIfNeeded: word)).littleEndian, toByteOffset: index, as: UInt64.self)
            raw.storeBytes(
                of: hexDigits(UInt32(truncatingIfNeeded: word >> 32)).littleEndian, toByteOffset: index + 8,
                as: UInt64.self)
            index += 16
        }
        appendHex(name.d0)
        appendHex(name.d1)
        appendHex(name.d2)
        appendHex(name.d3)
        var ext = name.ext
        if ext != 0 {
            buffer[index] = UInt8(ascii: ".")
            index += 1
            while ext != 0 {
                buffer[index] = UInt8(truncatingIfNeeded: ext)
                ext >>= 8
                index += 1
            }
        }
        return index
    }

    /// The 8 lowercase hex digits of the 4 bytes of `word` (least significant byte first, high nibble first), as
    /// ASCII packed little-endian: eight at once with shifts and masks (a hit builds a path from them).
    @inline(__always)
    static func hexDigits(_ word: UInt32) -> UInt64 {
        // One byte per 16-bit lane, then its high nibble in the lane's low byte and its low nibble in the high one.
        var lanes = UInt64(word)
        lanes = (lanes | lanes << 16) & 0x0000_FFFF_0000_FFFF
        lanes = (lanes | lanes << 8) & 0x00FF_00FF_00FF_00FF
        let nibbles = (lanes >> 4) & 0x000F_000F_000F_000F | (lanes & 0x000F_000F_000F_000F) << 8
        // '0' + n, plus 39 more ('a' - '0' - 10) where n > 9.
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 39
    }

    /// The extension of the key's path (query and fragment ignored), lowercased, when it is short and
    /// alphanumeric; nil otherwise.
    static func pathExtension(of key: String) -> String? {
        var key = key
        return key.withUTF8 { utf8 in
            pathExtensionRange(of: utf8).map { range in
                String(decoding: utf8[range].map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
            }
        }
    }

    /// Where the extension sits in the key's bytes: after the last `.` of the last path segment (before any `?`
    /// or `#`), 1 to ``maxExtensionLength`` ASCII letters or digits. The delimiters are ASCII, which UTF-8 never
    /// uses inside a multi-byte character, so a byte scan finds exactly them.
    ///
    /// Every hit names its file, so this runs per lookup: `memchr` finds the end of the path (vectorised, where a
    /// byte-by-byte switch cost ten instructions a byte of the key), then at most six bytes are looked at
    /// backwards. An extension is only letters and digits, so any other byte there (a `/` included) means none.
    static func pathExtensionRange(of utf8: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard let base = utf8.baseAddress, !utf8.isEmpty else { return nil }
        var end = utf8.count
        func cut(at delimiter: Unicode.Scalar) {
            guard let found = memchr(base, Int32(delimiter.value), end) else { return }
            end = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        cut(at: "?")
        cut(at: "#")
        var index = end - 1
        while index >= 0 && index >= end - 1 - maxExtensionLength {
            switch utf8[index] {
            case UInt8(ascii: "."):
                return index + 1 < end ? (index + 1)..<end : nil
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                index -= 1
            default:
                return nil
            }
        }
        return nil
    }

    /// True when `name` has the shape of an entry file name of this version.
    static func isEntryName(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        guard utf8.starts(with: prefix) else { return false }
        return hasDigestShape(utf8[prefix.count...])
    }

    /// True when `name` has the shape of an entry file name of format version 1 (64 hex digits of a SHA-256 and
    /// an optional extension): an entry no lookup finds any more, which sweeps remove — only in a directory that
    /// carries the cache's marker, since a SHA-256-named file elsewhere is as likely a user's as ours.
    static func isLegacyEntryName(_ name: String) -> Bool { hasDigestShape(Array(name.utf8)[...]) }

    /// True when `name` is a temporary file name this cache writes, or wrote in an earlier version: the prefix,
    /// then either the process's random part (1 to 13 base-36 digits, a `UInt64`), `-` and a counter (1 to 13
    /// base-36 digits) or an entry file name (of either format version); or, as the first version wrote them, 1 to
    /// 32 lowercase hex digits. Sweeps remove stale ones, and only these (in a directory the cache owns).
    static func isTemporaryName(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        let prefix = Array(temporaryPrefix.utf8)
        guard utf8.starts(with: prefix) else { return false }
        let rest = utf8[prefix.count...]
        guard let dash = rest.firstIndex(of: UInt8(ascii: "-")) else {
            return (1...32).contains(rest.count) && rest.allSatisfy(isLowercaseHex)
        }
        let random = rest[rest.startIndex..<dash]
        let tail = rest[(dash + 1)...]
        guard (1...13).contains(random.count), random.allSatisfy(isBase36) else { return false }
        if (1...13).contains(tail.count) && tail.allSatisfy(isBase36) { return true }
        return tail.starts(with: Self.prefix) ? hasDigestShape(tail.dropFirst(Self.prefix.count)) : hasDigestShape(tail)
    }

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func isBase36(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    /// 64 lowercase hex digits, then nothing or `.` and 1 to 5 of `[a-z0-9]`.
    private static func hasDigestShape(_ utf8: ArraySlice<UInt8>) -> Bool {
        guard utf8.count >= 64 else { return false }
        let start = utf8.startIndex
        guard utf8[start..<start + 64].allSatisfy(isLowercaseHex) else { return false }
        if utf8.count == 64 { return true }
        let ext = utf8[(start + 65)...]
        guard utf8[start + 64] == UInt8(ascii: "."), (1...maxExtensionLength).contains(ext.count) else { return false }
        return ext.allSatisfy(isBase36)
    }

    /// A fresh temporary file name: a random prefix drawn once per process (processes sharing the directory, in
    /// any pid namespace, never collide) and a counter (threads never collide); no system call per name.
    static func temporaryName() -> String {
        temporaryPrefixOfProcess + String(temporaryCounter.wrappingAdd(1, ordering: .relaxed).oldValue, radix: 36)
    }

    /// The temporary file name for a write of entry `name` by this process: the same each time, so the directory
    /// reuses the slot of the last one (a fresh name per write makes ext4's directory index grow and split).
    static func temporaryName(for name: DiskEntryName) -> String { temporaryPrefixOfProcess + name.fileName }

    private static let temporaryPrefixOfProcess: String = {
        var generator = SystemRandomNumberGenerator()
        return temporaryPrefix + String(generator.next() as UInt64, radix: 36) + "-"
    }()

    private static let temporaryCounter = Atomic<UInt64>(0)
}

/// The name of an entry file in compact form: the BLAKE3 digest of its key and its extension (at most 5 ASCII bytes,
/// packed little-endian; 0 for none). Hashable and cheap to copy, so the cache keys its bookkeeping by it, and
/// a hit builds the file's path on the stack instead of in Strings.
struct DiskEntryName: Hashable, Sendable {
    let d0: UInt64
    let d1: UInt64
    let d2: UInt64
    let d3: UInt64
    let ext: UInt64

    /// The 3-byte prefix, 64 hex digits, a dot and 5 extension bytes.
    static let maxFileNameLength = 73

    /// The file name as a String.
    var fileName: String {
        String(unsafeUninitializedCapacity: Self.maxFileNameLength) { DiskFileNaming.writeFileName(self, into: $0) }
    }

    /// Calls `body` with the NUL-terminated path `<directory>/<file name>`, built in a temporary buffer.
    func withPath<R>(in directory: [UInt8], _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: directory.count + Self.maxFileNameLength + 2) {
            buffer in
            var index = directory.count
            directory.withUnsafeBufferPointer { source in
                if index > 0 { buffer.baseAddress!.update(from: source.baseAddress!, count: index) }
            }
            buffer[index] = UInt8(ascii: "/")
            index += 1
            index += DiskFileNaming.writeFileName(self, into: UnsafeMutableBufferPointer(rebasing: buffer[index...]))
            buffer[index] = 0
            return try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }
}
