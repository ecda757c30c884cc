import CJXL
import Foundation
import ImageCore

/// Builds JPEG XL files with libjxl's encoder directly, for what the SDK's encoder does not write: 16-bit and
/// float samples, wide-gamut colour encodings, progressive passes, containers. Traps on a libjxl failure (a
/// broken test input, not a finding).
enum JXLTestFiles {
    enum Samples {
        case uint8, uint16, float
    }

    struct Spec {
        var width = 48
        var height = 32
        var channels = 4
        var samples = Samples.uint8
        var bitsPerSample: UInt32 = 8
        var lossless = true
        var distance: Float = 1
        var primaries = JXL_PRIMARIES_SRGB
        var progressive = false
        var container = false
        var orientation = 1
        /// Adds fine pseudo-random detail, so most of a lossy file is AC (what progressive passes refine).
        var texture = false
    }

    /// A gradient in [0, 1], `channels` per pixel (the last one alpha when there are 2 or 4).
    static func pattern(width: Int, height: Int, channels: Int) -> [Double] {
        var values: [Double] = []
        values.reserveCapacity(width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                let colour = [
                    Double(x) / Double(max(1, width - 1)), Double(y) / Double(max(1, height - 1)),
                    Double(x + y) / Double(max(1, width + height - 2)),
                ]
                let alpha = 0.2 + 0.8 * Double(x * y) / Double(max(1, (width - 1) * (height - 1)))
                switch channels {
                case 1: values.append(colour[0])
                case 2: values += [colour[0], alpha]
                case 3: values += colour
                default: values += colour + [alpha]
                }
            }
        }
        return values
    }

    /// The 8-bit value libjxl should produce for a sample in [0, 1].
    static func eight(_ value: Double) -> UInt8 { UInt8((value * 255).rounded()) }

    static func make(_ spec: Spec) -> Data {
        let encoder = JxlEncoderCreate(nil)!
        defer { JxlEncoderDestroy(encoder) }
        if spec.container { precondition(JxlEncoderUseContainer(encoder, 1) == JXL_ENC_SUCCESS) }
        var info = JxlBasicInfo()
        JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(spec.width)
        info.ysize = UInt32(spec.height)
        info.bits_per_sample = spec.bitsPerSample
        info.exponent_bits_per_sample = spec.samples == .float ? 8 : 0
        info.num_color_channels = spec.channels <= 2 ? 1 : 3
        let alpha = spec.channels == 2 || spec.channels == 4
        info.alpha_bits = alpha ? spec.bitsPerSample : 0
        info.alpha_exponent_bits = alpha && spec.samples == .float ? 8 : 0
        info.num_extra_channels = alpha ? 1 : 0
        info.uses_original_profile = spec.lossless ? 1 : 0
        info.orientation = JxlOrientation(UInt32(spec.orientation))
        precondition(JxlEncoderSetBasicInfo(encoder, &info) == JXL_ENC_SUCCESS)
        var color = JxlColorEncoding()
        JxlColorEncodingSetToSRGB(&color, spec.channels <= 2 ? 1 : 0)
        color.primaries = spec.primaries
        precondition(JxlEncoderSetColorEncoding(encoder, &color) == JXL_ENC_SUCCESS)
        let settings = JxlEncoderFrameSettingsCreate(encoder, nil)!
        if spec.lossless {
            precondition(JxlEncoderSetFrameLossless(settings, 1) == JXL_ENC_SUCCESS)
        } else {
            precondition(JxlEncoderSetFrameDistance(settings, spec.distance) == JXL_ENC_SUCCESS)
        }
        if spec.progressive {
            _ = JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_PROGRESSIVE_DC, 1)
            _ = JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_PROGRESSIVE_AC, 1)
            _ = JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_RESPONSIVE, 1)
        }
        var values = pattern(width: spec.width, height: spec.height, channels: spec.channels)
        if spec.texture {
            var state: UInt32 = 12345
            values = values.map { value in
                state = state &* 1_664_525 &+ 1_013_904_223
                return min(1, max(0, value + Double(state >> 24) / 255 * 0.3 - 0.15))
            }
        }
        let status: JxlEncoderStatus
        switch spec.samples {
        case .uint8:
            var format = JxlPixelFormat(
                num_channels: UInt32(spec.channels), data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
            let bytes = values.map(eight)
            status = bytes.withUnsafeBytes { JxlEncoderAddImageFrame(settings, &format, $0.baseAddress, $0.count) }
        case .uint16:
            var format = JxlPixelFormat(
                num_channels: UInt32(spec.channels), data_type: JXL_TYPE_UINT16, endianness: JXL_NATIVE_ENDIAN,
                align: 0)
            let words = values.map { UInt16(($0 * 65535).rounded()) }
            status = words.withUnsafeBytes { JxlEncoderAddImageFrame(settings, &format, $0.baseAddress, $0.count) }
        case .float:
            var format = JxlPixelFormat(
                num_channels: UInt32(spec.channels), data_type: JXL_TYPE_FLOAT, endianness: JXL_NATIVE_ENDIAN,
                align: 0)
            let floats = values.map { Float($0) }
            status = floats.withUnsafeBytes { JxlEncoderAddImageFrame(settings, &format, $0.baseAddress, $0.count) }
        }
        precondition(status == JXL_ENC_SUCCESS)
        JxlEncoderCloseInput(encoder)
        var output = [UInt8](repeating: 0, count: 1 << 16)
        var written = 0
        while true {
            var result = JXL_ENC_ERROR
            output.withUnsafeMutableBufferPointer { buffer in
                var next: UnsafeMutablePointer<UInt8>? = buffer.baseAddress! + written
                var available = buffer.count - written
                result = JxlEncoderProcessOutput(encoder, &next, &available)
                written = buffer.count - available
            }
            if result == JXL_ENC_NEED_MORE_OUTPUT {
                output += [UInt8](repeating: 0, count: output.count)
                continue
            }
            precondition(result == JXL_ENC_SUCCESS)
            return Data(output.prefix(written))
        }
    }

    /// A bare codestream whose size header declares `width × height` (each a multiple of 8 up to 256, or any
    /// value up to 2^30), followed by nothing: what a bomb's header looks like before any data.
    static func sizeHeaderOnly(width: Int, height: Int) -> Data {
        var bits: [Bool] = []
        func put(_ value: Int, _ count: Int) { for bit in 0..<count { bits.append(value >> bit & 1 == 1) } }
        put(0, 1)  // not small
        put(3, 2)  // 30-bit distribution
        put(height - 1, 30)
        put(0, 3)  // no ratio: the width follows
        put(3, 2)
        put(width - 1, 30)
        var bytes: [UInt8] = [0xFF, 0x0A]
        for start in stride(from: 0, to: bits.count, by: 8) {
            var byte: UInt8 = 0
            for (offset, bit) in bits[start..<min(bits.count, start + 8)].enumerated() where bit {
                byte |= 1 << UInt8(offset)
            }
            bytes.append(byte)
        }
        return Data(bytes + [0, 0, 0, 0])
    }
}
