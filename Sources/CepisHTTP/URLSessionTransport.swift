import CepisSupport
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The `URLSession` transport: one attempt, the body streamed in under its cap, stopped at
/// once when cancelled or out of time.
///
/// The transport owns a private `URLSession` made from the caller's configuration with a
/// delegate, because only a delegate sees the body as it arrives: a completion handler
/// would buffer a hostile, endless body whole before we could look at it. The delegate also
/// refuses every redirect, so a 3xx comes back to ``HTTPExecutor``, which applies the
/// same-origin rule for every transport alike.
package final class URLSessionTransport: HTTPTransport {
  private let session: URLSession
  private let router: TaskRouter

  /// Creates a transport with `configuration`'s proxies, cookies and headers, but no
  /// HTTP cache and no URLSession timeouts of its own that could fire before ours.
  package init(configuration: URLSessionConfiguration) {
    let configuration = configuration.copy() as? URLSessionConfiguration ?? .ephemeral
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
    // The core enforces its own deadlines; these only stop a leaked task in the worst case.
    configuration.timeoutIntervalForRequest = 3_600
    configuration.timeoutIntervalForResource = 7_200
    self.router = TaskRouter()
    self.session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
  }

  deinit {
    session.invalidateAndCancel()
  }

  /// Sends `request` once (see ``HTTPTransport``).
  package func send(_ request: HTTPRequest, timeout: TimeInterval) async throws -> HTTPResponse {
    var urlRequest = URLRequest(
      url: request.url, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData)
    urlRequest.httpMethod = "GET"
    // A backstop far beyond the core's own deadline, never the deadline itself.
    urlRequest.timeoutInterval = max(60, timeout * 4)
    for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
    let task = session.dataTask(with: urlRequest)
    let router = self.router
    return try await withAttemptDeadline(timeout) { gate in
      let exchange = Exchange(maxBodyBytes: request.maxBodyBytes, gate: gate)
      router.register(exchange, for: task.taskIdentifier)
      gate.setAbort {
        router.unregister(task.taskIdentifier)
        task.cancel()
      }
      exchange.onEnd = { router.unregister(task.taskIdentifier) }
      task.resume()
    }
  }
}

/// The body and response of one task as the delegate queue delivers them.
///
/// `@unchecked Sendable` is sound: every mutable field lives in `state`, a `LockedValue`;
/// `onEnd` is set once before the task starts and only read afterwards.
private final class Exchange: @unchecked Sendable {
  private struct State {
    var response: HTTPURLResponse?
    var body = Data()
  }

  let maxBodyBytes: Int
  let gate: AttemptGate
  var onEnd: (@Sendable () -> Void)?
  private let state = LockedValue(State())

  init(maxBodyBytes: Int, gate: AttemptGate) {
    self.maxBodyBytes = maxBodyBytes
    self.gate = gate
  }

  private func finish(_ outcome: Result<HTTPResponse, Error>) {
    state.withLock { $0 = State() }
    gate.finish(outcome)
    onEnd?()
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
    let (response, body) = state.withLock { ($0.response, $0.body) }
    guard let response else {
      finish(.failure(HTTPFailure.network("connection closed before a response")))
      return
    }
    var headers: [String: String] = [:]
    for (key, value) in response.allHeaderFields {
      guard let name = key as? String, let text = value as? String else { continue }
      headers[name.lowercased()] = text
    }
    finish(.success(HTTPResponse(status: response.statusCode, headers: headers, body: body)))
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
      case NSURLErrorSecureConnectionFailed, NSURLErrorServerCertificateUntrusted,
        NSURLErrorServerCertificateHasBadDate, NSURLErrorServerCertificateNotYetValid,
        NSURLErrorServerCertificateHasUnknownRoot, NSURLErrorClientCertificateRejected:
        return "TLS handshake failed"
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
    // Never followed here: the 3xx goes back to the executor, which follows it only within
    // the same origin, the same way for every transport.
    completionHandler(nil)
  }

  func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
    exchange(task)?.completed(error: error)
  }
}
