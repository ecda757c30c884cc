/// How far a target's current load has come: the value behind `UIView.sd_imageProgress` (an `NSProgress`).
///
/// A plain value: read it at any time (``ImageTarget/imageProgress``) or observe it
/// (``ImageTarget/imageProgressUpdates``). A new `setImage` resets it to ``zero``; download progress sets the unit
/// counts (bytes); a final image makes it ``isFinished`` with ``fractionCompleted`` 1.0 (a memory hit too, which
/// never reports bytes). A failed or cancelled load leaves it where it stopped, as SDWebImage does.
public struct ImageTargetProgress: Hashable, Sendable {
    /// Bytes received so far (`NSProgress.completedUnitCount`).
    public var completedUnitCount: Int
    /// Bytes expected in all, when the loader knows them (`NSProgress.totalUnitCount`); nil when unknown.
    public var totalUnitCount: Int?
    /// True once the load delivered its final image.
    public var isFinished: Bool

    /// No load yet, or a load that just started.
    public static let zero = ImageTargetProgress(completedUnitCount: 0, totalUnitCount: nil, isFinished: false)

    /// Creates a progress value.
    public init(completedUnitCount: Int, totalUnitCount: Int?, isFinished: Bool) {
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
        self.isFinished = isFinished
    }

    /// 1.0 once finished; else the received share of the expected bytes in 0...1 (0 while the size is unknown).
    public var fractionCompleted: Double {
        if isFinished { return 1 }
        guard let total = totalUnitCount, total > 0 else { return 0 }
        return min(1, max(0, Double(completedUnitCount) / Double(total)))
    }
}
