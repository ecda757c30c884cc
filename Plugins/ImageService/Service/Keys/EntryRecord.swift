import Foundation
import ImageCore
import ImageServiceQuery

/// What the service stores beside the bytes of a cached source or result, in the entry's extended data: where the
/// bytes came from (judged against the policy on every hit), until when they may be reused, and for a result, the
/// validator of the source it was rendered from (a revalidated source with the same validator keeps the result).
///
/// Encoded as compact JSON, well under DiskCache's 2 KiB of extended data for any real redirect chain (a chain
/// whose record would not fit is not stored: the store fails cleanly and the next request fetches again).
struct EntryRecord: Sendable, Equatable, Codable {
    /// Format version: a record of another version is a miss.
    var version = 1
    /// Every hop the source came through.
    var provenance: SourceProvenance
    /// When it must be revalidated, and what the source itself allowed.
    var freshness: SourceFreshness
    /// The lifetime the source stated itself, seconds (nil: none); a 304 that states none keeps it.
    var statedLifetime: Double?
    /// The lifetime it stated for a private cache (``FreshnessPolicy/ownPrivateLifetime(headers:now:)``), kept with
    /// ``statedLifetime``.
    var statedPrivateLifetime: Double?
    /// The source's validator (`etag:…`, `lm:…` or `sha256:…`).
    var sourceValidator: String
    /// The source's `ETag` and `Last-Modified`, sent back when revalidating (sources only).
    var etag: String?
    var lastModified: String?

    func encoded() -> Data? { try? JSONEncoder().encode(self) }

    static func decode(_ data: Data?) -> EntryRecord? {
        guard let data, let record = try? JSONDecoder().decode(EntryRecord.self, from: data), record.version == 1
        else { return nil }
        return record
    }
}
