import ColorManagement
import Foundation
import ImageCore
import Testing

@Suite struct LCMSConverterTests {
    @Test func linksLCMS2() {
        #expect(LCMSColorConverter.libraryVersion >= 2000)
    }
}
