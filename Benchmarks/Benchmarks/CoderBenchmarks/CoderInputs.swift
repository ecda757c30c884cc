import BenchSupport
import Foundation
import ImageCore
import Synchronization

/// The formats of the coder suite.
enum CoderFormat: String, CaseIterable, Sendable {
    case jpeg = "JPEG"
    case png = "PNG"
    case webp = "WebP"
    case gif = "GIF"

    /// Channels of the pixels the SDK decodes this input to, and that the C baseline therefore produces:
    /// RGB for the opaque photo in JPEG, PNG and WebP; RGBA for GIF (the SDK composites GIF onto RGBA).
    var decodedChannels: Int { self == .gif ? 4 : 3 }
}

/// The three input sizes (see ``BenchSupport/Inputs/coderSizes``).
enum CoderSize: String, CaseIterable, Sendable {
    case mp12 = "12MP"
    case mp2 = "2MP"
    case small = "small"

    var pixels: Pixels {
        switch self {
        case .mp12: Inputs.photo12MP
        case .mp2: Inputs.photo2MP
        case .small: Inputs.photoSmall
        }
    }
}

/// Encoded inputs, built on first use (in a benchmark's setup) with the raw C encoders, so the SDK and the C
/// baseline decode the very same bytes. The benchmark tool runs every benchmark in its own process, so only the
/// one input a benchmark needs is built, once.
enum CoderInputs {
    private static let encoded = Mutex<[String: Data]>([:])
    private static let images = Mutex<[String: Image]>([:])

    static func data(_ format: CoderFormat, _ size: CoderSize) -> Data {
        let key = "\(format.rawValue)-\(size.rawValue)"
        if let data = encoded.withLock({ $0[key] }) { return data }
        let data: Data
        switch format {
        // The 12 MP JPEG is the camera's own file; smaller ones are crops encoded at quality 90.
        case .jpeg: data = size == .mp12 ? Inputs.photo12MPJPEG : CEncode.jpeg(size.pixels, quality: 90)
        case .png: data = CEncode.png(size.pixels)
        case .webp: data = CEncode.webp(size.pixels, quality: 85)
        case .gif: data = CEncode.gif(size.pixels)
        }
        encoded.withLock { $0[key] = data }
        return data
    }

    /// The pixels the encoders take: RGB for JPEG, PNG and WebP; RGBA for GIF.
    static func encodePixels(_ format: CoderFormat, _ size: CoderSize) -> Pixels {
        format == .gif ? size.pixels.rgba() : size.pixels
    }

    /// ``encodePixels(_:_:)`` as an SDK image, built once.
    static func encodeInput(_ format: CoderFormat, _ size: CoderSize) -> Image {
        let key = "\(format.rawValue)-\(size.rawValue)"
        if let image = images.withLock({ $0[key] }) { return image }
        let image = encodePixels(format, size).image
        images.withLock { $0[key] = image }
        return image
    }
}
