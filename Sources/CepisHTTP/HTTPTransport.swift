import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// One attempt: send a request, stream the body in under a size cap, stop at once when
/// cancelled.
///
/// The transport owns a private `URLSession` made from the caller's configuration with a
/// delegate, because only a delegate sees the body as it arrives: a completion handler
/// would buffer a hostile, endless body whole before we could look at it. Cancellation
/// resumes the waiting caller immediately instead of waiting for `URLSession` to report
/// back, so a cancelled or timed-out call never hangs on FoundationNetworking.
package final class HTTPTransport: Sendable {
  /// The largest body accepted, in bytes.
  package let maxBodyBytes: Int
  private let session: URLSession
  private let router: TaskRouter

  /// Creates a transport with `configuration`'s proxies, cookies and headers, but no
  /// HTTP cache and no URLSession timeouts of its own that could fire before ours.
  package init(configuration: URLSessionConfiguration, maxBodyBytes: Int) {
    let configuration = configuration.copy() as? URLSessionConfiguration ?? .ephemeral
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
    // The core enforces its own deadlines; these only stop a leaked task in the worst case.
    configuration.timeoutIntervalForRequest = 3_600
    configuration.timeoutIntervalForResource = 7_200
    self.maxBodyBytes = maxBodyBytes
    self.router = TaskRouter()
    self.session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
  }

  deinit {
    session.invalidateAndCancel()
  }

  /// Sends `request` and returns the complete response within `timeout` seconds (headers
  /// and body), or throws `HTTPFailure` (`.network`, `.bodyTooLarge`), ``AttemptTimedOut`` or
  /// `CancellationError`.
  ///
  /// The deadline is a dispatch timer that ends the exchange itself, not a second task racing
  /// this one: no extra task, and it holds whatever URLSession does.
  package func send(_ request: URLRequest, timeout: TimeInterval) async throws -> HTTPResponse {
    try Task.checkCancellation()
    let task = session.dataTask(with: request)
    let exchange = Exchange(maxBodyBytes: maxBodyBytes, task: task)
    router.register(exchange, for: task.taskIdentifier)
    defer { router.unregister(task.taskIdentifier) }
    // A timer source, not `asyncAfter`: a cancelled source is released at once, whereas a
    // cancelled `asyncAfter` item stays queued, with everything it captured, until its
    // deadline — thousands of response bodies in a bulk run.
    let timer = DispatchSource.makeTimerSource(queue: .global())
    timer.setEventHandler { [weak exchange] in
      exchange?.finish(.failure(AttemptTimedOut(seconds: timeout)))
    }
    timer.schedule(deadline: .now() + .nanoseconds(Int(min(timeout, 86_400) * 1e9)))
    timer.resume()
    defer { timer.cancel() }
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        if exchange.install(continuation) {
          task.resume()
        }
      }
    } onCancel: {
      exchange.finish(.failure(CancellationError()))
    }
  }
}

/// Thrown by ``HTTPTransport/send(_:timeout:)`` when the attempt's deadline expires first.
package struct AttemptTimedOut: Error, Sendable {
  /// The deadline that expired, in seconds.
  package var seconds: TimeInterval
}

/// The state of one request in flight, shared between the caller and the delegate queue.
///
/// `@unchecked Sendable` is sound: every mutable field lives in `state`, a `LockedValue`,
/// and `task` is a `URLSessionTask`, whose `cancel()` is documented as thread-safe.
private final class Exchange: @unchecked Sendable {
  private struct State {
    var continuation: CheckedContinuation<HTTPResponse, Error>?
    var outcome: Result<HTTPResponse, Error>?
    var response: HTTPURLResponse?
    var body = Data()
    var finished = false
  }

  let maxBodyBytes: Int
  let task: URLSessionTask
  private let state = LockedValue(State())

  init(maxBodyBytes: Int, task: URLSessionTask) {
    self.maxBodyBytes = maxBodyBytes
    self.task = task
  }

  /// Installs the waiting caller; returns `false` when the exchange already ended
  /// (cancelled before it started), in which case the caller has been resumed.
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

  /// Ends the exchange once; later calls are ignored. Cancels the task unless it succeeded.
  func finish(_ outcome: Result<HTTPResponse, Error>) {
    let continuation: CheckedContinuation<HTTPResponse, Error>? = state.withLock { state in
      guard !state.finished else { return nil }
      state.finished = true
      state.outcome = outcome
      state.body = Data()
      let waiting = state.continuation
      state.continuation = nil
      return waiting
    }
    continuation?.resume(with: outcome)
    if case .failure = outcome {
      // On Linux `cancel()` waits for FoundationNetworking's work queue, which every session
      // in the process shares and which a peer flooding a body can keep busy for seconds.
      // The caller has already been resumed; the cancel happens off any caller's thread.
      let task = self.task
      DispatchQueue.global().async { task.cancel() }
    }
  }

  func received(response: URLResponse) {
    guard let http = response as? HTTPURLResponse else {
      finish(.failure(HTTPFailure.network("not an HTTP response")))
      return
    }
    if http.expectedContentLength > Int64(maxBodyBytes) {
      finish(.failure(HTTPFailure.bodyTooLarge(limit: maxBodyBytes)))
      return
    }
    state.withLock { $0.response = http }
  }

  func received(data: Data) {
    let overflow = state.withLock { state -> Bool in
      guard !state.finished else { return false }
      if state.body.count + data.count > maxBodyBytes { return true }
      state.body.append(data)
      return false
    }
    if overflow {
      finish(.failure(HTTPFailure.bodyTooLarge(limit: maxBodyBytes)))
    }
  }

  func completed(error: Error?) {
    if let error {
      finish(.failure(HTTPFailure.network(Self.describe(error))))
      return
    }
    let snapshot = state.withLock { ($0.response, $0.body) }
    guard let http = snapshot.0 else {
      finish(.failure(HTTPFailure.network("connection closed before a response")))
      return
    }
    var headers: [String: String] = [:]
    for (key, value) in http.allHeaderFields {
      guard let name = key as? String, let text = value as? String else { continue }
      headers[name.lowercased()] = text
    }
    let body = snapshot.1
    // A body cut short of its Content-Length is a broken connection, whatever the
    // platform's URL loading reported (compressed bodies are measured before decoding).
    if headers["content-encoding"] == nil, let declared = headers["content-length"],
      let expected = Int(declared.trimmingCharacters(in: .whitespaces)), expected != body.count
    {
      finish(
        .failure(
          HTTPFailure.network("body truncated: \(body.count) of \(expected) bytes received")))
      return
    }
    finish(.success(HTTPResponse(status: http.statusCode, headers: headers, body: body)))
  }

  private static func describe(_ error: Error) -> String {
    let nsError = error as NSError
    if nsError.domain == NSURLErrorDomain {
      switch nsError.code {
      case NSURLErrorCannotConnectToHost: return "connection refused"
      case NSURLErrorNetworkConnectionLost: return "connection lost"
      case NSURLErrorTimedOut: return "timed out"
      case NSURLErrorCannotFindHost, NSURLErrorDNSLookupFailed: return "host not found"
      case NSURLErrorNotConnectedToInternet: return "not connected to the internet"
      case NSURLErrorSecureConnectionFailed: return "TLS handshake failed"
      case NSURLErrorBadServerResponse: return "bad server response"
      default: return "URL error \(nsError.code)"
      }
    }
    return "\(nsError.domain) \(nsError.code)"
  }
}

/// The session delegate: routes each task's events to its `Exchange`.
///
/// `@unchecked Sendable` is sound: its only state, `exchanges`, is a `LockedValue`.
private final class TaskRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
  private let exchanges = LockedValue([Int: Exchange]())

  func register(_ exchange: Exchange, for identifier: Int) {
    exchanges.withLock { $0[identifier] = exchange }
  }

  func unregister(_ identifier: Int) {
    exchanges.withLock { $0[identifier] = nil }
  }

  private func exchange(_ task: URLSessionTask) -> Exchange? {
    exchanges.withLock { $0[task.taskIdentifier] }
  }

  func urlSession(
    _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
  ) {
    exchange(dataTask)?.received(response: response)
    completionHandler(.allow)
  }

  func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
    exchange(dataTask)?.received(data: data)
  }

  func urlSession(
    _ session: URLSession, task: URLSessionTask,
    willPerformHTTPRedirection response: HTTPURLResponse,
    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
  ) {
    // Redirects are followed only to the same scheme and host: a redirect must never move a
    // request (and its headers, such as an API key) to another origin or to cleartext.
    let original = task.originalRequest?.url
    if let target = request.url, let original, target.scheme == original.scheme,
      target.host == original.host, target.port == original.port
    {
      completionHandler(request)
    } else {
      completionHandler(nil)
    }
  }

  func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
    exchange(task)?.completed(error: error)
  }
}
