import Crypto
import Foundation

/// Signs and verifies request URLs with HMAC-SHA256, with several keys valid at once for rotation.
///
/// The signed message is the request's path, `?`, and its raw query string with the `sig` parameter taken out
/// (every other pair kept in its order and its percent-encoding, as sent). The signature is the unpadded
/// base64url of the 32-byte MAC, in the `sig` parameter anywhere in the query. An optional `expires` parameter
/// (Unix seconds) is covered like any other and refused once past.
///
/// Rotation: ``sign(path:query:)`` uses the first key; ``verify(path:query:now:)`` accepts any of them. Deploy a
/// new key second, then first once every signer has it, then drop the old one. Comparisons are constant-time
/// (swift-crypto's `HMAC.isValidAuthenticationCode`). Value type; thread-safe.
public struct URLSigner: Sendable {
    /// Why a request's signature was refused.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// No `sig` parameter (or more than one).
        case missing
        /// The signature matches no key.
        case mismatch
        /// `expires` is past or not a number.
        case expired

        /// A sentence for the response body.
        public var description: String {
            switch self {
            case .missing: "the request is not signed (one sig parameter expected)"
            case .mismatch: "the signature does not match"
            case .expired: "the signed URL has expired"
            }
        }
    }

    /// A key that could not be read.
    public struct InvalidKey: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong.
        public let message: String
        /// `message`.
        public var description: String { message }
    }

    /// Raw key bytes (swift-crypto's `SymmetricKey` is not `Sendable`; one is made per use, which is cheap).
    private let keys: [[UInt8]]

    /// The number of keys accepted.
    public var keyCount: Int { keys.count }

    /// Creates a signer from raw keys; the first one signs.
    public init(keys: [[UInt8]]) {
        self.keys = keys
    }

    /// Creates a signer from keys written as hex (at least 32 digits: 16 bytes) or `base64:` followed by
    /// standard or URL-safe base64 (at least 16 bytes).
    ///
    /// - Throws: ``InvalidKey`` for a key that is neither, or shorter than 16 bytes.
    public init(encodedKeys: [String]) throws(InvalidKey) {
        var keys: [[UInt8]] = []
        for (index, text) in encodedKeys.enumerated() {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            guard let bytes = Self.decodeKey(trimmed), bytes.count >= 16 else {
                throw InvalidKey(message: "signing key \(index + 1): give at least 16 bytes as hex or base64:…")
            }
            keys.append(bytes)
        }
        self.init(keys: keys)
    }

    static func decodeKey(_ text: String) -> [UInt8]? {
        if text.hasPrefix("base64:") {
            var body = text.dropFirst(7).replacingOccurrences(of: "-", with: "+").replacingOccurrences(
                of: "_", with: "/")
            while body.count % 4 != 0 { body += "=" }
            return Data(base64Encoded: body).map { [UInt8]($0) }
        }
        guard text.count % 2 == 0, text.allSatisfy(\.isHexDigit) else { return nil }
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// The signature of `path` and `query` (raw, without `sig`) with the first key.
    public func signature(path: String, query: String) -> String {
        guard let key = keys.first else { return "" }
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data(Self.message(path: path, query: query).utf8), using: SymmetricKey(data: key))
        return Self.base64URL(Data(mac))
    }

    /// `path?query&sig=…`: the URL to hand out.
    public func sign(path: String, query: String) -> String {
        let separator = query.isEmpty ? "" : "&"
        return "\(path)?\(query)\(separator)sig=\(signature(path: path, query: query))"
    }

    /// Checks the `sig` of a request with `path` and raw `query`.
    ///
    /// - Throws: ``Refusal``.
    public func verify(path: String, query: String, now: Date = Date()) throws(Refusal) {
        var signature: Substring?
        var kept: [Substring] = []
        // Empty pairs are kept: the message must be the query as signed, minus the sig pair only.
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            if pair.hasPrefix("sig=") {
                guard signature == nil else { throw .missing }
                signature = pair.dropFirst(4)
            } else {
                kept.append(pair)
            }
        }
        guard let signature, let mac = Self.decodeBase64URL(signature), mac.count == SHA256.byteCount else {
            throw .missing
        }
        let message = Data(Self.message(path: path, query: kept.joined(separator: "&")).utf8)
        guard
            keys.contains(where: {
                HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: message, using: SymmetricKey(data: $0))
            })
        else { throw .mismatch }
        if let expires = kept.first(where: { $0.hasPrefix("expires=") }) {
            guard let seconds = Int64(expires.dropFirst(8)), Double(seconds) >= now.timeIntervalSince1970 else {
                throw .expired
            }
        }
    }

    static func message(path: String, query: String) -> String { "\(path)?\(query)" }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: Substring) -> Data? {
        guard text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }), text.allSatisfy(\.isASCII)
        else { return nil }
        var body = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while body.count % 4 != 0 { body += "=" }
        return Data(base64Encoded: body)
    }
}
