import ImageCore

extension ImageContextOption {
    /// `Double`, seconds: this load's total transfer deadline, instead of
    /// ``HTTPLoaderConfiguration/maximumTransferDuration``. A request modifier's ``/ImageCore/ImageRequest/timeout``
    /// wins.
    public static let httpTransferTimeout = ImageContextOption(
        "webimage.httploader.transferTimeout",
        traits: OptionTraits(.bytesFetched, download: .field("webimage.httploader.transferTimeout")))
}

extension ImageContext {
    /// This load's total transfer deadline in seconds; see ``ImageContextOption/httpTransferTimeout``.
    public var httpTransferTimeout: Double? {
        get { value(.httpTransferTimeout) }
        set { self[.httpTransferTimeout] = newValue }
    }
}

extension ImageError.Code {
    /// ``HTTPLoaderConfiguration/redirectFilter`` refused a redirect hop; the target was not contacted.
    public static let redirectRefused = ImageError.Code("redirectRefused")
}
