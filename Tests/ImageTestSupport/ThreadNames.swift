import Foundation
import ImageCore

/// The calling thread's name in the kernel (`/proc/thread-self/comm`: what `perf` and `top` show, 15 bytes at
/// most), or nil where there is no such file.
public func kernelThreadName() -> String? {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
}

/// Runs `body` on a new thread that first names itself `name` in the kernel, as an event loop that spawns pool
/// threads is named.
public func startThreadNamed(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        WorkPool.nameCurrentThread(name)
        body()
    }
    thread.start()
}
