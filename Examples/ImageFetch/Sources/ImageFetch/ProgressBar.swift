import Foundation
import Synchronization

/// A one-line progress bar redrawn in place on stderr: `[#########-----------]  9/20  45%  1.2 MB`.
///
/// Thread-safe: `advance` may be called from concurrent tasks. Drawing happens under the lock so lines never
/// interleave; it only writes to stderr, never calls out.
final class ProgressBar: Sendable {
    private struct State {
        var done = 0
        var bytes = 0
    }

    private let total: Int
    private let width = 30
    private let state = Mutex(State())

    init(total: Int) { self.total = max(1, total) }

    /// Counts one finished item of `bytes` bytes and redraws.
    func advance(bytes: Int) {
        state.withLock { state in
            state.done += 1
            state.bytes += bytes
            draw(state)
        }
    }

    /// Ends the line so the summary starts on a fresh one.
    func finish() { FileHandle.standardError.write(Data("\n".utf8)) }

    private func draw(_ state: State) {
        let filled = width * state.done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let percent = 100 * state.done / total
        let line = "\r[\(bar)] \(state.done)/\(total) \(percent)% \(formatBytes(state.bytes))"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

/// `1.2 MB`, `340 KB`, `12 B`.
func formatBytes(_ bytes: Int) -> String {
    switch bytes {
    case ..<1024: "\(bytes) B"
    case ..<(1024 * 1024): String(format: "%.1f KB", Double(bytes) / 1024)
    default: String(format: "%.1f MB", Double(bytes) / 1_048_576)
    }
}
