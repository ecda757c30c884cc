import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Forwards AsyncHTTPClient's response events to a ``Transfer``; one delegate per attempt.
///
/// Runs on the task's event loop. Returning a failed future from the head or body callback makes
/// AsyncHTTPClient cancel the request (closing the connection) and fail the task with that error, which is how
/// size and status checks abort a download mid-stream.
final class TransferDelegate: HTTPClientResponseDelegate {
    typealias Response = Void

    private let transfer: Transfer

    init(transfer: Transfer) { self.transfer = transfer }

    func didVisitURL(task: HTTPClient.Task<Void>, _ request: HTTPClient.Request, _ head: HTTPResponseHead) {
        transfer.visited(request, head: head)
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        if let error = transfer.receivedHead(head) { return task.eventLoop.makeFailedFuture(error) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        if let error = transfer.receivedBody(buffer, eventLoop: task.eventLoop) {
            return task.eventLoop.makeFailedFuture(error)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}
