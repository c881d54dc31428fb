import CepisSupport
import Foundation

/// One `GET` as the core hands it to a transport.
package struct HTTPRequest: Sendable {
  /// The absolute URL.
  package var url: URL
  /// Header fields, in the order they are sent.
  package var headers: [(name: String, value: String)]
  /// The largest body accepted, in bytes; a longer one ends the attempt with
  /// ``HTTPFailure/bodyTooLarge(limit:)``.
  package var maxBodyBytes: Int
  /// What the request asks for, by name (`single`, `batch`, `health`, `cpf`), for the
  /// client's events; never sent.
  package var endpoint: String

  /// Creates a request.
  package init(
    url: URL, headers: [(name: String, value: String)], maxBodyBytes: Int,
    endpoint: String = "request"
  ) {
    self.url = url
    self.headers = headers
    self.maxBodyBytes = maxBodyBytes
    self.endpoint = endpoint
  }

  /// The value of header `name`, matched without regard to case.
  func header(_ name: String) -> String? {
    headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
  }
}

/// The transport seam: one attempt of one `GET`, and nothing more.
///
/// A transport sends the request, streams the body in under ``HTTPRequest/maxBodyBytes``
/// (rejecting a larger `Content-Length` as soon as the headers arrive), and hands back the
/// complete response. It never follows a redirect (a 3xx comes back as it is), never retries,
/// and never interprets a status. Everything else — retries, the retry budget, `Retry-After`,
/// the total deadline, the same-origin redirect rule, body framing checks and error mapping —
/// lives once, above it, in ``HTTPExecutor``, so every transport behaves the same.
///
/// Contract of ``send(_:timeout:)``:
/// - it returns within `timeout` seconds, headers and body included, or throws
///   ``AttemptTimedOut``; the transport enforces this itself (``withAttemptDeadline(_:_:)``);
/// - cancelling the calling task resumes it at once with `CancellationError`, and the request
///   in flight is abandoned (its connection closed);
/// - connection failures throw ``HTTPFailure/network(_:)`` with a short, secret-free
///   description ("connection refused", "host not found", "TLS handshake failed", …);
/// - an over-long body throws ``HTTPFailure/bodyTooLarge(limit:)``.
package protocol HTTPTransport: Sendable {
  /// Sends `request` once and returns the complete response (see the protocol's contract).
  func send(_ request: HTTPRequest, timeout: TimeInterval) async throws -> HTTPResponse
}

/// Thrown by ``HTTPTransport/send(_:timeout:)`` when the attempt's deadline expires first.
package struct AttemptTimedOut: Error, Sendable {
  /// The deadline that expired, in seconds.
  package var seconds: TimeInterval

  /// Creates the error.
  package init(seconds: TimeInterval) {
    self.seconds = seconds
  }
}

/// The one-shot meeting point of a waiting caller and the exchange that answers it.
///
/// Whichever comes first — the answer, the deadline or the caller's cancellation — ends the
/// attempt; later outcomes are ignored. When the attempt ends without an answer, the abort
/// action (cancel the `URLSessionTask`, cancel the AsyncHTTPClient request) runs once, off the
/// caller's thread, after the caller has been resumed.
///
/// `@unchecked Sendable` is sound: every mutable field lives in `state`, a ``LockedValue``.
package final class AttemptGate: @unchecked Sendable {
  private struct State {
    var continuation: CheckedContinuation<HTTPResponse, Error>?
    var outcome: Result<HTTPResponse, Error>?
    var abort: (@Sendable () -> Void)?
  }

  private let state = LockedValue(State())

  /// Creates an open gate.
  package init() {}

  /// Sets what ends the exchange early; runs it at once if the attempt already failed.
  package func setAbort(_ abort: @escaping @Sendable () -> Void) {
    let runNow = state.withLock { state -> Bool in
      if let outcome = state.outcome {
        if case .failure = outcome { return true }
        return false
      }
      state.abort = abort
      return false
    }
    if runNow { DispatchQueue.global().async { abort() } }
  }

  /// Installs the waiting caller; `false` when the attempt already ended (the caller has then
  /// been resumed with that outcome and the exchange must not start).
  func install(_ continuation: CheckedContinuation<HTTPResponse, Error>) -> Bool {
    let early: Result<HTTPResponse, Error>? = state.withLock { state in
      if let outcome = state.outcome { return outcome }
      state.continuation = continuation
      return nil
    }
    if let early {
      continuation.resume(with: early)
      return false
    }
    return true
  }

  /// Ends the attempt once; later calls are ignored.
  package func finish(_ outcome: Result<HTTPResponse, Error>) {
    let (continuation, abort) = state.withLock {
      state -> (CheckedContinuation<HTTPResponse, Error>?, (@Sendable () -> Void)?) in
      guard state.outcome == nil else { return (nil, nil) }
      state.outcome = outcome
      let waiting = state.continuation
      let abort = state.abort
      state.continuation = nil
      state.abort = nil
      return (waiting, abort)
    }
    continuation?.resume(with: outcome)
    if case .failure = outcome, let abort {
      // On Linux `URLSessionTask.cancel()` waits for FoundationNetworking's work queue, which a
      // peer flooding a body can keep busy for seconds: the caller has already been resumed,
      // and the abort happens off any caller's thread.
      DispatchQueue.global().async { abort() }
    }
  }
}

/// The queue attempt deadlines fire on: a serial queue of Cepis's own, which Dispatch gives a
/// thread of its own when needed, so that a deadline holds even when the application's work
/// (blocking reads, say) fills the global queue's few threads. Its handlers only resume a
/// caller.
private let attemptDeadlines = DispatchQueue(label: "cepis.attempt-deadlines")

/// Runs one attempt: `start` begins the exchange, which reports through the gate; the call
/// returns its outcome, or throws ``AttemptTimedOut`` after `timeout` seconds or
/// `CancellationError` as soon as the calling task is cancelled.
///
/// The deadline is a dispatch timer source that ends the attempt itself, not a second task
/// racing this one: no extra task, and it holds whatever the transport underneath does. A
/// timer source, not `asyncAfter`: a cancelled source is released at once, whereas a cancelled
/// `asyncAfter` item stays queued, with everything it captured, until its deadline.
///
/// A transport whose own deadline is exact and covers the whole exchange (AsyncHTTPClient's, run
/// on its event loop) passes `timeout: nil`: the timer source, and the two wake-ups of
/// libdispatch's manager thread it costs per attempt, are then saved.
package func withAttemptDeadline(
  _ timeout: TimeInterval?,
  _ start: (AttemptGate) -> Void
) async throws -> HTTPResponse {
  try Task.checkCancellation()
  let gate = AttemptGate()
  var timer: (any DispatchSourceTimer)?
  if let timeout {
    let source = DispatchSource.makeTimerSource(queue: attemptDeadlines)
    // The gate is held strongly: the source is cancelled (and lets go of this handler) when
    // the attempt ends, below. A weak reference would cost a side table per attempt, which
    // LeakSanitizer reports as a leak when a process exits with an attempt still running
    // (the table is reachable only through bits of the gate's reference count).
    source.setEventHandler {
      gate.finish(.failure(AttemptTimedOut(seconds: timeout)))
    }
    source.schedule(deadline: .now() + .nanoseconds(Int(min(max(timeout, 0), 86_400) * 1e9)))
    source.resume()
    timer = source
  }
  defer { timer?.cancel() }
  return try await withTaskCancellationHandler {
    try await withCheckedThrowingContinuation { continuation in
      if gate.install(continuation) {
        start(gate)
      }
    }
  } onCancel: {
    gate.finish(.failure(CancellationError()))
  }
}
