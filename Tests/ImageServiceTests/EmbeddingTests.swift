import ColorManagement
import ImageCore
import JXLCoder
import Testing

@testable import ImageService

/// The service is a library a host application embeds beside its own use of the SDK: making one must leave the
/// process-wide registrations the host chose alone. Before, every `ImageService` replaced the registered colour
/// converter with lcms2's, so a host that registered its own found its loads converted by another.
@Suite struct EmbeddingTests {
    /// The host's converter: lcms2's work under another type, so the services other tests run at the same time
    /// convert exactly as with lcms2's own.
    struct HostConverter: ColorConverter {
        func convertToSRGB(_ pixels: PixelBuffer, iccProfile: [UInt8]) throws -> PixelBuffer {
            try LCMSColorConverter.shared.convertToSRGB(pixels, iccProfile: iccProfile)
        }

        func convertToSRGB(_ samples: ColorSamples, iccProfile: [UInt8]?) throws -> PixelBuffer {
            try LCMSColorConverter.shared.convertToSRGB(samples, iccProfile: iccProfile)
        }
    }

    @Test func aServiceLeavesTheHostsRegistrationsAlone() async throws {
        ColorConversion.register(HostConverter())
        defer { ColorConversion.register(LCMSColorConverter.shared) }
        let fixture = try await ServiceFixture.start { _ in .respond(status: .notFound, body: []) }
        #expect(ColorConversion.converter is HostConverter, "the host's converter was replaced")
        #expect(PerceptualQuality.metric != nil)
        await fixture.stop()
    }
}
