import CepisSupport
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The `URLSession` transport: one attempt, the body streamed in under its cap, stopped at
/// once when cancelled or out of time.
///
/// The transport owns private `URLSession`s made from the caller's configuration with a
/// delegate, because only a delegate sees the body as it arrives: a completion handler
/// would buffer a hostile, endless body whole before we could look at it. The delegate also
/// refuses every redirect, so a 3xx comes back to ``HTTPExecutor``, which applies the
/// same-origin rule for every transport alike.
///
/// Proxies follow ``ProxySettings`` unless the configuration names its own (see
/// ``init(configuration:proxy:)``). On Apple platforms each request goes through a session
/// whose `connectionProxyDictionary` names its proxy (or none: an empty dictionary), one
/// session per proxy. FoundationNetworking on Linux stores `connectionProxyDictionary` but never
/// applies it (its libcurl layer leaves every proxy option unset, a TODO in
/// swift-corelibs-foundation's `EasyHandle.swift`); libcurl then reads `http_proxy`,
/// `https_proxy`, `all_proxy` and `no_proxy` from the process environment itself. So on Linux a
/// request goes out only when the settings route it as libcurl will — always the case for
/// settings read from the process environment, except a `no_proxy` entry with a port — and
/// otherwise fails with a network error naming the difference, never taking the wrong way.
final class URLSessionTransport: HTTPTransport {
  /// Where a request's proxy comes from.
  private enum Routing {
    /// The configuration's own `connectionProxyDictionary`, untouched.
    case configuration
    /// ``ProxySettings``; `libcurl` is how libcurl will route (Linux only).
    case settings(ProxySettings, libcurl: ProxySettings?)
  }

  private let configuration: URLSessionConfiguration
  private let routing: Routing
  private let trustRoots: TrustRoots?
  private let sessions = LockedValue([ProxyEndpoint?: SessionSlot]())

  /// Creates a transport with `configuration`'s cookies, headers and (when it names any)
  /// proxies, but no HTTP cache and no URLSession timeouts of its own that could fire before
  /// ours.
  ///
  /// - Parameter proxy: the proxies to use. `nil`: the configuration's own when its
  ///   `connectionProxyDictionary` is set (even to an empty dictionary, which means none),
  ///   otherwise the process environment's (``ProxySettings/processEnvironment``, read now).
  /// - Parameter trustRoots: authorities trusted besides the system's, on Apple platforms only
  ///   (``ServerTrust``); FoundationNetworking on Linux has no per-session roots.
  package init(
    configuration: URLSessionConfiguration, proxy: ProxySettings? = nil,
    trustRoots: TrustRoots? = nil
  ) {
    self.trustRoots = trustRoots
    let configuration = configuration.copy() as? URLSessionConfiguration ?? .ephemeral
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
    // The core enforces its own deadlines; these only stop a leaked task in the worst case.
    configuration.timeoutIntervalForRequest = 3_600
    configuration.timeoutIntervalForResource = 7_200
    self.configuration = configuration
    let settings: ProxySettings?
    if let proxy {
      settings = proxy
    } else if configuration.connectionProxyDictionary == nil {
      settings = .processEnvironment
    } else {
      settings = nil
    }
    if let settings {
      #if canImport(FoundationNetworking)
        let libcurl = (proxy == nil ? settings : ProxySettings.processEnvironment).asCurlReadsThem
        self.routing = .settings(settings, libcurl: libcurl)
      #else
        self.routing = .settings(settings, libcurl: nil)
      #endif
    } else {
      self.routing = .configuration
    }
  }

  deinit {
    for slot in sessions.withLock({ Array($0.values) }) {
      slot.session.invalidateAndCancel()
    }
  }

  /// The proxy the transport sends `url` through, `nil` for none (or the configuration's own).
  func proxy(for url: URL) -> ProxyEndpoint? {
    guard case .settings(let settings, _) = routing else { return nil }
    return settings.proxy(for: url)
  }

  /// The session for requests through `proxy`, made on first use.
  private func slot(for proxy: ProxyEndpoint?) -> SessionSlot {
    sessions.withLock { slots in
      if let slot = slots[proxy] { return slot }
      let configuration = self.configuration.copy() as? URLSessionConfiguration ?? .ephemeral
      if case .settings(let settings, _) = routing, !settings.isDirect {
        configuration.connectionProxyDictionary = proxy.map(Self.dictionary(for:)) ?? [:]
      }
      let router = TaskRouter(trustRoots: trustRoots)
      let slot = SessionSlot(
        session: URLSession(configuration: configuration, delegate: router, delegateQueue: nil),
        router: router)
      slots[proxy] = slot
      return slot
    }
  }

  /// A `connectionProxyDictionary` sending both schemes through `proxy` (the string values of
  /// `kCFNetworkProxiesHTTPEnable` and its siblings, which Linux's Foundation does not declare).
  private static func dictionary(for proxy: ProxyEndpoint) -> [AnyHashable: Any] {
    [
      "HTTPEnable": 1, "HTTPProxy": proxy.host, "HTTPPort": proxy.port,
      "HTTPSEnable": 1, "HTTPSProxy": proxy.host, "HTTPSPort": proxy.port,
    ]
  }

  /// Sends `request` once (see ``HTTPTransport``).
  package func send(_ request: HTTPRequest, timeout: TimeInterval) async throws -> HTTPResponse {
    var proxy: ProxyEndpoint?
    // Without any proxy on either side (the common case) there is nothing to decide.
    if case .settings(let settings, let libcurl) = routing,
      !(settings.isDirect && libcurl?.isDirect ?? true)
    {
      proxy = settings.proxy(for: request.url)
      #if canImport(FoundationNetworking)
        if let libcurl, libcurl.proxy(for: request.url) != proxy {
          throw HTTPFailure.network(
            "proxy settings cannot be applied: URLSession on Linux routes by the process "
              + "environment (\(libcurl.proxy(for: request.url)?.description ?? "direct")), "
              + "not \(proxy?.description ?? "direct")")
        }
        // libcurl applies the proxy itself: one session serves every route.
        proxy = nil
      #endif
    }
    let slot = self.slot(for: proxy)
    var urlRequest = URLRequest(
      url: request.url, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData)
    urlRequest.httpMethod = "GET"
    // A backstop far beyond the core's own deadline, never the deadline itself.
    urlRequest.timeoutInterval = max(60, timeout * 4)
    for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
    let task = slot.session.dataTask(with: urlRequest)
    let router = slot.router
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

/// One session and the delegate that routes its tasks (task identifiers are per session).
///
/// `@unchecked Sendable` is sound: both fields are constants, `URLSession` is thread-safe
/// (FoundationNetworking does not mark it `Sendable`) and `TaskRouter` is `Sendable`.
private struct SessionSlot: @unchecked Sendable {
  let session: URLSession
  let router: TaskRouter
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
    state.withLock { state in
      state.response = http
      // -1 when the length is not declared.
      reserveDeclaredBody(&state.body, length: Int(http.expectedContentLength))
    }
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

  /// Ends the attempt with what was wrong with the server's certificate (Apple platforms:
  /// ``ServerTrust``), before the task reports its cancelled challenge.
  func reject(_ rejection: TLSRejection) {
    finish(.failure(rejection))
  }

  func completed(error: Error?) {
    if let error {
      if let rejection = Self.rejection(error) {
        finish(.failure(rejection))
      } else {
        finish(.failure(HTTPFailure.network(Self.describe(error))))
      }
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
      case NSURLErrorUnknown where isTLSFailure(nsError):
        return "TLS handshake failed"
      default: return "URL error \(nsError.code)"
      }
    }
    return "\(nsError.domain) \(nsError.code)"
  }

  /// The certificate problem (or plain HTTP answer) libcurl's message describes, for a TLS
  /// error; `nil` for any other error, or a TLS failure another attempt might not meet.
  private static func rejection(_ error: Error) -> TLSRejection? {
    let nsError = error as NSError
    guard nsError.domain == NSURLErrorDomain, describe(error) == "TLS handshake failed" else {
      return nil
    }
    let description = (nsError.userInfo[NSLocalizedDescriptionKey] as? String) ?? ""
    return TLSRejection(libcurlDescription: description)
  }

  /// Whether an unknown-code error is a failed TLS handshake. FoundationNetworking reports a
  /// peer that breaks off the handshake (libcurl's `SSL_ERROR_SYSCALL`, say, from a server that
  /// answers a ClientHello in plain HTTP) as `NSURLErrorUnknown`; libcurl's message, which it
  /// keeps as the description, is then the only sign of what failed.
  private static func isTLSFailure(_ error: NSError) -> Bool {
    let description = (error.userInfo[NSLocalizedDescriptionKey] as? String) ?? ""
    return description.contains("SSL") || description.contains("TLS")
  }
}

/// The session delegate: routes each task's events to its `Exchange`.
///
/// `@unchecked Sendable` is sound: its only state, `exchanges`, is a `LockedValue`.
private final class TaskRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
  private let exchanges = LockedValue([Int: Exchange]())
  private let trustRoots: TrustRoots?

  init(trustRoots: TrustRoots?) {
    self.trustRoots = trustRoots
  }

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

  #if canImport(Security)
    func urlSession(
      _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
      completionHandler:
        @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) ->
        Void
    ) {
      guard let trustRoots else {
        completionHandler(.performDefaultHandling, nil)
        return
      }
      let (disposition, credential, rejection) = ServerTrust.evaluate(
        challenge, adding: trustRoots)
      if let rejection { exchange(task)?.reject(rejection) }
      completionHandler(disposition, credential)
    }
  #endif
}
