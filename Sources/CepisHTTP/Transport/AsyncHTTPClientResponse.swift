#if AsyncHTTPClient
  import AsyncHTTPClient
  import CepisSupport
  import Foundation
  import NIOCore
  import NIOHTTP1

  /// Collects one response on its event loop and ends the attempt there.
  ///
  /// `@unchecked Sendable` is sound: AsyncHTTPClient calls a delegate on the task's event loop
  /// only, one callback at a time, so the mutable fields are never touched by two threads; the
  /// gate is itself thread-safe.
  final class ResponseCollector: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    let gate: AttemptGate
    let limit: Int
    let timeout: TimeInterval
    private var status = 0
    private var headers: [String: String] = [:]
    private var body = Data()

    init(gate: AttemptGate, limit: Int, timeout: TimeInterval) {
      self.gate = gate
      self.limit = limit
      self.timeout = timeout
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<
      Void
    > {
      status = Int(head.status.code)
      headers = fold(head.headers)
      if let declared = declaredLength(head.headers) {
        if declared > limit { return refuse(task) }
        reserveDeclaredBody(&body, length: declared)
      }
      return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<
      Void
    > {
      guard body.count + buffer.readableBytes <= limit else { return refuse(task) }
      buffer.withUnsafeReadableBytes { body.append(contentsOf: $0) }
      return task.eventLoop.makeSucceededVoidFuture()
    }

    /// Ends the attempt on an over-long body; the failed future makes AsyncHTTPClient drop the
    /// request and close its connection.
    private func refuse(_ task: HTTPClient.Task<Void>) -> EventLoopFuture<Void> {
      let failure = HTTPFailure.bodyTooLarge(limit: limit)
      gate.finish(.failure(failure))
      body = Data()
      return task.eventLoop.makeFailedFuture(failure)
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: Error) {
      gate.finish(
        .failure(error as? HTTPFailure ?? AsyncHTTPClientTransport.map(error, timeout: timeout)))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
      gate.finish(.success(HTTPResponse(status: status, headers: headers, body: body)))
      body = Data()
    }
  }

  /// An empty request body that AsyncHTTPClient cannot replay (it is a `Sequence` without
  /// contiguous storage), so that it returns a redirect instead of following it.
  struct NoBytes: Sequence, Sendable {
    func makeIterator() -> EmptyCollection<UInt8>.Iterator { EmptyCollection().makeIterator() }
  }
#endif
