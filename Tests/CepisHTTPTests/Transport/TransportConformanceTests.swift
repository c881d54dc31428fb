import CepisSupport
import CepisTestSupport
import Foundation
import Testing

@testable import CepisHTTP
@testable import CepisMock

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif
#if AsyncHTTPClient
  import AsyncHTTPClient
#endif

/// The contract of ``HTTPTransport`` under ``HTTPExecutor``, run over every transport this build
/// has, against CepisMock and a forward proxy on 127.0.0.1: a new transport must pass all of it.
///
/// Every test builds its transport with `kind.makeBase(proxy:)`, with proxies injected (never the
/// process environment). The suite runs its tests one at a time: on Linux, cancelling an
/// abandoned `URLSessionTask` holds a dispatch thread until FoundationNetworking's work queue
/// (one for every session of the process) gets to it, and several at once delay the dispatch
/// timers that enforce other tests' deadlines.
@Suite("Transport conformance", .serialized)
struct TransportConformanceTests {
  // MARK: Deadlines and cancellation

  @Test(
    "the attempt deadline ends a slow answer near the deadline", arguments: testedTransportKinds
  )
  func attemptDeadline(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      // The upper bound is loose for a loaded machine (a test process whose cooperative
      // pool is busy for seconds); the answer would come far later.
      server.script(.cep, [.delayHeaders(30)])
      let executor = try makeExecutor(kind, attemptTimeout: 0.3)
      let (outcome, elapsed) = await measure { try await executor.perform(request(server)) }
      guard case .failure(HTTPFailure.timedOut(let message)) = outcome else {
        Issue.record("expected an attempt timeout, got \(outcome)")
        return
      }
      #expect(message.contains("attempt timeout"))
      #expect(elapsed >= 0.25 && elapsed < 15, "took \(elapsed) s")
    }
  }

  @Test("the total deadline ends the call, retries included", arguments: testedTransportKinds)
  func totalDeadline(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      server.setMode(.cep, [.delayHeaders(60)])
      let executor = try makeExecutor(kind, attemptTimeout: 30, maxAttempts: 3, totalTimeout: 0.4)
      let (outcome, elapsed) = await measure { try await executor.perform(request(server)) }
      guard case .failure(HTTPFailure.timedOut(let message)) = outcome else {
        Issue.record("expected the total timeout, got \(outcome)")
        return
      }
      #expect(message.contains("total timeout"))
      #expect(elapsed >= 0.35 && elapsed < 15, "took \(elapsed) s")
    }
  }

  @Test("cancelling the task ends the attempt at once", arguments: testedTransportKinds)
  func cancellation(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      server.script(.cep, [.delayHeaders(10)])
      let executor = try makeExecutor(kind, attemptTimeout: 30)
      let call = Task { try await executor.perform(request(server)) }
      try await waitForRequests(server, count: 1)
      let start = Date()
      call.cancel()
      await #expect(throws: CancellationError.self) { try await call.value }
      #expect(Date().timeIntervalSince(start) < 5, "cancellation took too long")
    }
  }

  // MARK: Body cap and framing

  @Test(
    "a declared Content-Length over the cap is refused before the body",
    arguments: testedTransportKinds)
  func declaredBodyCap(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      // Dribbled a byte every 50 ms, reading up to the cap would take about an hour.
      server.setMode(.cep, [.dribble(gap: 0.05)])
      server.script(.cep, [.oversizedBody(bytes: 1 << 20)])
      let executor = try makeExecutor(kind, attemptTimeout: 30)
      let (outcome, elapsed) = await measure {
        try await executor.perform(request(server, maxBodyBytes: 64 << 10))
      }
      #expect(outcome.failure == .bodyTooLarge(limit: 64 << 10), "\(outcome)")
      #expect(elapsed < 15, "took \(elapsed) s")
    }
  }

  @Test("a chunked body that grows past the cap is cut off", arguments: testedTransportKinds)
  func streamedBodyCap(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      server.script(.cep, [.endlessChunked])
      let executor = try makeExecutor(kind, attemptTimeout: 30)
      let (outcome, elapsed) = await measure {
        try await executor.perform(request(server, maxBodyBytes: 256 << 10))
      }
      #expect(outcome.failure == .bodyTooLarge(limit: 256 << 10), "\(outcome)")
      #expect(elapsed < 10, "took \(elapsed) s")
    }
  }

  @Test(
    "a body cut short of its Content-Length, or a reset after the head, is a network failure",
    arguments: testedTransportKinds, [MockFault.truncatedBody, .resetAfterHeaders])
  func framing(kind: Transport.Kind, fault: MockFault) async throws {
    try await MockServer.withServer { server in
      server.script(.cep, [fault])
      let executor = try makeExecutor(kind, attemptTimeout: 5)
      let (outcome, _) = await measure { try await executor.perform(request(server)) }
      guard case .failure(HTTPFailure.network) = outcome else {
        Issue.record("\(fault) over \(kind): expected a network failure, got \(outcome)")
        return
      }
      #expect(server.requests.count == 1)
    }
  }

  // MARK: Redirects

  @Test("same-origin redirects are followed, at most five", arguments: testedTransportKinds)
  func sameOriginRedirects(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      // Each leg resumes the calling task on Swift's pool before the next is sent: a
      // generous deadline, so that a pool busy with other tests cannot end the attempt.
      let executor = try makeExecutor(kind, attemptTimeout: 30)
      server.script(.cep, (1...5).map { .redirect(status: 302, location: "/\($0)/01001000") })
      let response = try await executor.perform(request(server))
      #expect(response.status == 200)
      #expect(server.requests.map(\.path).last == "/5/01001000")
      #expect(server.requests.count == 6)

      server.clearLog()
      server.script(.cep, (1...6).map { .redirect(status: 307, location: "/\($0)/01001000") })
      let (outcome, _) = await measure { try await executor.perform(request(server)) }
      #expect(outcome.failure == .redirectLoop, "\(outcome)")
      #expect(server.requests.count == 6)  // the request and five redirects, never a seventh
    }
  }

  @Test("a redirect loop ends at once", arguments: testedTransportKinds)
  func redirectLoop(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      server.script(.cep, [.redirect(status: 301, location: "/01001000")])
      let executor = try makeExecutor(kind, attemptTimeout: 30, maxAttempts: 3)
      let (outcome, _) = await measure { try await executor.perform(request(server)) }
      #expect(outcome.failure == .redirectLoop, "\(outcome)")
      #expect(server.requests.count == 1)
    }
  }

  @Test("a redirect to another origin comes back unfollowed", arguments: testedTransportKinds)
  func crossOriginRedirect(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      let port = try #require(server.baseURL.port)
      server.script(.cep, [.redirect(status: 302, location: "http://localhost:\(port)/01001000")])
      let executor = try makeExecutor(kind, attemptTimeout: 5)
      let response = try await executor.perform(request(server))
      #expect(response.status == 302)
      #expect(server.requests.count == 1)
    }
  }

  // MARK: Connection failures

  @Test("a refused connection is 'connection refused'", arguments: testedTransportKinds)
  func connectionRefused(kind: Transport.Kind) async throws {
    // A port that was just listening and is closed now.
    let server = try await MockServer.start()
    let url = server.baseURL
    await server.stop()
    // Far sooner than the attempt timeout (the bound is loose for a loaded machine).
    let executor = try makeExecutor(kind, attemptTimeout: 60)
    let (outcome, elapsed) = await measure {
      try await executor.perform(HTTPRequest(url: url, headers: [], maxBodyBytes: 1 << 20))
    }
    #expect(outcome.failure == .network("connection refused"), "\(outcome)")
    #expect(elapsed < 15, "took \(elapsed) s")
  }

  @Test("an unknown host is 'host not found'", arguments: testedTransportKinds)
  func unknownHost(kind: Transport.Kind) async throws {
    // `.invalid` is reserved (RFC 2606): no resolver answers it, online or not.
    let url = try #require(URL(string: "http://cepis-conformance.invalid/01001000"))
    let executor = try makeExecutor(kind, attemptTimeout: 5)
    let (outcome, _) = await measure {
      try await executor.perform(HTTPRequest(url: url, headers: [], maxBodyBytes: 1 << 20))
    }
    #expect(outcome.failure == .network("host not found"), "\(outcome)")
  }

  @Test(
    "TLS to a server that speaks plain HTTP says so, and is not retried",
    arguments: testedTransportKinds)
  func tlsFailure(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      let port = try #require(server.baseURL.port)
      let url = try #require(URL(string: "https://127.0.0.1:\(port)/01001000"))
      let executor = try makeExecutor(kind, attemptTimeout: 60, maxAttempts: 3)
      let (outcome, elapsed) = await measure {
        try await executor.perform(HTTPRequest(url: url, headers: [], maxBodyBytes: 1 << 20))
      }
      #expect(outcome.failure == .network(TLSRejection(.notTLS).message), "\(outcome)")
      #expect(elapsed < 15, "took \(elapsed) s")
    }
  }

  // MARK: Proxies

  @Test("http goes through the proxy", arguments: testedTransportKinds)
  func httpThroughProxy(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      let proxy = try ForwardProxy(upstreamPort: try #require(server.baseURL.port))
      defer { proxy.stop() }
      let settings = ProxySettings(environment: ["http_proxy": proxy.url])
      let executor = try makeExecutor(kind, attemptTimeout: 5, proxy: settings)
      // No resolver knows this host: only the proxy can have reached the mock.
      let url = try #require(URL(string: "http://cep.cepis-proxy.invalid/01001000"))
      let (outcome, _) = await measure {
        try await executor.perform(HTTPRequest(url: url, headers: [], maxBodyBytes: 1 << 20))
      }
      if Self.linuxURLSession(kind) {
        // libcurl takes its proxy from the process environment only: the transport refuses
        // rather than go direct.
        #expect(outcome.refusedByURLSessionOnLinux, "\(outcome)")
        #expect(proxy.relayed.isEmpty)
        return
      }
      #expect(try outcome.get().status == 200)
      #expect(proxy.relayed == [Self.proxiedForm(kind)])
      #expect(server.requests.map(\.path) == ["/01001000"])
    }
  }

  @Test("https asks the proxy for a CONNECT tunnel", arguments: testedTransportKinds)
  func httpsThroughProxy(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      let proxy = try ForwardProxy(upstreamPort: try #require(server.baseURL.port))
      defer { proxy.stop() }
      let settings = ProxySettings(environment: ["HTTPS_PROXY": proxy.url])
      let executor = try makeExecutor(kind, attemptTimeout: 5, proxy: settings)
      let url = try #require(URL(string: "https://cep.cepis-proxy.invalid/01001000"))
      let (outcome, _) = await measure {
        try await executor.perform(HTTPRequest(url: url, headers: [], maxBodyBytes: 1 << 20))
      }
      if Self.linuxURLSession(kind) {
        #expect(outcome.refusedByURLSessionOnLinux, "\(outcome)")
        #expect(proxy.relayed.isEmpty)
        return
      }
      // The test proxy refuses every tunnel (502): the attempt fails, after asking it.
      guard case .failure(HTTPFailure.network) = outcome else {
        Issue.record("expected a network failure, got \(outcome)")
        return
      }
      #expect(proxy.relayed == ["CONNECT cep.cepis-proxy.invalid:443"])
      #expect(server.requests.isEmpty)
    }
  }

  @Test(
    "no_proxy hosts go direct, the others through the proxy", arguments: testedTransportKinds)
  func noProxyGoesDirect(kind: Transport.Kind) async throws {
    try await MockServer.withServer { server in
      let port = try #require(server.baseURL.port)
      let proxy = try ForwardProxy(upstreamPort: port)
      defer { proxy.stop() }
      let settings = ProxySettings(environment: [
        "http_proxy": proxy.url, "no_proxy": "localhost, .cepis-direct.invalid,127.0.0.1",
      ])
      let executor = try makeExecutor(kind, attemptTimeout: 5, proxy: settings)
      let direct = try await executor.perform(request(server))
      #expect(direct.status == 200)
      #expect(proxy.relayed.isEmpty)
      #expect(server.requests.count == 1)

      // The same transport still proxies a host the list does not name.
      let url = try #require(URL(string: "http://cep.cepis-proxy.invalid/01001000"))
      let (outcome, _) = await measure {
        try await executor.perform(HTTPRequest(url: url, headers: [], maxBodyBytes: 1 << 20))
      }
      if Self.linuxURLSession(kind) {
        #expect(outcome.refusedByURLSessionOnLinux, "\(outcome)")
        #expect(proxy.relayed.isEmpty)
      } else {
        #expect(try outcome.get().status == 200)
        #expect(proxy.relayed == [Self.proxiedForm(kind)])
      }
    }
  }

  // MARK: Helpers

  /// How `kind` asks the proxy for `http://cep.cepis-proxy.invalid/01001000`: URLSession
  /// (libcurl) in absolute form, AsyncHTTPClient through a `CONNECT` tunnel, which it opens for
  /// every scheme.
  static func proxiedForm(_ kind: Transport.Kind) -> String {
    switch kind {
    case .urlSession: return "GET http://cep.cepis-proxy.invalid/01001000"
    case .asyncHTTPClient: return "CONNECT cep.cepis-proxy.invalid:80"
    }
  }

  /// Whether `kind` is URLSession on FoundationNetworking, where only the process environment
  /// can set a proxy (see ``URLSessionTransport``).
  static func linuxURLSession(_ kind: Transport.Kind) -> Bool {
    #if canImport(FoundationNetworking)
      // The process environment routes the test hosts direct unless the machine has a proxy.
      return kind == .urlSession
    #else
      return false
    #endif
  }
}

/// An executor over a new transport of `kind` (direct unless `proxy` says otherwise), without
/// backoff and without a retry budget.
func makeExecutor(
  _ kind: Transport.Kind, attemptTimeout: TimeInterval, maxAttempts: Int = 1,
  totalTimeout: TimeInterval? = nil, proxy: ProxySettings = .direct
) throws -> HTTPExecutor {
  let transport = try #require(
    Transports.shared(kind, proxy: proxy), "\(kind) is listed but cannot be made")
  return HTTPExecutor(
    policy: RetryPolicy(
      maxAttempts: maxAttempts, backoffBase: 0, backoffMax: 0, attemptTimeout: attemptTimeout,
      totalTimeout: totalTimeout),
    transport: transport, budget: nil)
}

/// One transport per kind and proxy settings for the whole run, as an app keeps its
/// `Transport.default`.
///
/// On Linux, releasing a `URLSession` whose task was just abandoned (`invalidateAndCancel` racing
/// the task's own cancellation on FoundationNetworking's work queue, one for every session of
/// the process) holds that queue for seconds, delaying every other test's URLSession traffic.
enum Transports {
  private static let made = LockedValue([String: any HTTPTransport]())

  static func shared(_ kind: Transport.Kind, proxy: ProxySettings) -> (any HTTPTransport)? {
    made.withLock { made in
      let key = "\(kind.rawValue) \(proxy)"
      if let transport = made[key] { return transport }
      let transport = kind.makeBase(proxy: proxy)
      made[key] = transport
      return transport
    }
  }
}

/// A `GET` of the mock's cep route.
func request(_ server: MockServer, maxBodyBytes: Int = 1 << 20) -> HTTPRequest {
  HTTPRequest(
    url: server.baseURL.appendingPathComponent("01001000"),
    headers: [("Accept", "application/json"), ("Cache-Control", "no-cache")],
    maxBodyBytes: maxBodyBytes)
}

/// The outcome of `body` and the seconds it took.
func measure<T>(
  _ body: () async throws -> T
) async -> (Result<T, any Error>, TimeInterval) {
  let start = Date()
  do {
    let value = try await body()
    return (.success(value), Date().timeIntervalSince(start))
  } catch {
    return (.failure(error), Date().timeIntervalSince(start))
  }
}

/// Waits (up to 10 s) until the server has logged `count` requests.
func waitForRequests(_ server: MockServer, count: Int) async throws {
  let deadline = Date().addingTimeInterval(10)
  while server.requests.count < count {
    guard Date() < deadline else { throw HTTPFailure.network("request never arrived") }
    try await Task.sleep(nanoseconds: 10_000_000)
  }
}

extension Result where Success == HTTPResponse {
  /// The ``HTTPFailure`` the call ended with, `nil` for a response or another error.
  var failure: HTTPFailure? {
    guard case .failure(let error) = self else { return nil }
    return error as? HTTPFailure
  }

  /// Whether URLSession on Linux refused to route the request otherwise than libcurl will.
  var refusedByURLSessionOnLinux: Bool {
    guard case .network(let message) = failure else { return false }
    return message.hasPrefix("proxy settings cannot be applied")
  }
}

/// A caller's own proxy setting is theirs: the environment never replaces it.
@Suite("Proxies: a caller's own settings")
struct CallerProxySettingsTests {
  @Test("a URLSessionConfiguration whose connectionProxyDictionary is set keeps it")
  func urlSessionConfiguration() throws {
    let url = try #require(URL(string: "http://a.example/"))
    let own = URLSessionConfiguration.ephemeral
    own.connectionProxyDictionary = [:]
    #expect(URLSessionTransport(configuration: own).proxy(for: url) == nil)
    // Settings passed explicitly win over the configuration's.
    let endpoint = ProxyEndpoint(host: "proxy.corp", port: 3128)
    let settings = ProxySettings(environment: [:], proxy: endpoint)
    #expect(URLSessionTransport(configuration: own, proxy: settings).proxy(for: url) == endpoint)
  }

  #if AsyncHTTPClient
    @Test("an HTTPClient configuration that names a proxy keeps it")
    func asyncHTTPClientConfiguration() async throws {
      try await MockServer.withServer { server in
        let proxy = try ForwardProxy(upstreamPort: try #require(server.baseURL.port))
        defer { proxy.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .server(host: "127.0.0.1", port: proxy.port)
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let url = try #require(URL(string: "http://cep.cepis-proxy.invalid/01001000"))
        #expect(transport.proxy(for: url) == nil)  // not Cepis's settings: the client's own
        let response = try await transport.send(
          HTTPRequest(url: url, headers: [], maxBodyBytes: 1 << 20), timeout: 5)
        #expect(response.status == 200)
        #expect(proxy.relayed == ["CONNECT cep.cepis-proxy.invalid:80"])
      }
    }

    @Test("a caller's HTTPClient is used as it is")
    func callerClient() throws {
      let url = try #require(URL(string: "http://a.example/"))
      #expect(AsyncHTTPClientTransport(client: .shared).proxy(for: url) == nil)
    }
  #endif
}
