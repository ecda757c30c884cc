import Foundation
import ImageCore
import PNGCoder
import Synchronization

/// Claims exactly the bytes the built-in ``PNGCoder`` claims, counts what it decodes, and hands the work to it.
///
/// Registered after `PNGCoder`, it wins for every PNG: ``CodersManager`` asks the coder added last first. The
/// same pattern lets you put policy (an audit log, a stricter size limit, another library) in front of a
/// built-in coder without forking it.
final class AuditingPNGCoder: ImageCoder {
    private let wrapped = PNGCoder.shared
    private let decodeCount = Atomic<Int>(0)

    /// PNGs decoded through this coder so far.
    var decodes: Int { decodeCount.load(ordering: .relaxed) }

    func canDecode(_ data: Data) -> Bool { wrapped.canDecode(data) }

    func probe(_ data: Data) -> ImageProperties? { wrapped.probe(data) }

    func decode(_ data: Data, options: ImageDecodeOptions) throws -> Image {
        decodeCount.add(1, ordering: .relaxed)
        return try wrapped.decode(data, options: options)
    }

    func canEncode(to format: ImageFormat) -> Bool { wrapped.canEncode(to: format) }

    func encodesExactly(to format: ImageFormat) -> Bool { wrapped.encodesExactly(to: format) }

    func encode(_ image: Image, as format: ImageFormat, options: ImageEncodeOptions) throws -> Data {
        try wrapped.encode(image, as: format, options: options)
    }
}
