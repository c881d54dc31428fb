#if AsyncHTTPClient
  import AsyncHTTPClient
  import CepisSupport
  import Foundation
  import NIOCore
  import NIOHTTP1
  import NIOPosix
  import NIOSSL

  #if Observability
    import Tracing
  #endif

  /// The AsyncHTTPClient transport: one attempt on a SwiftNIO `HTTPClient`, the body collected
  /// under its cap, stopped at once when cancelled or out of time.
  ///
  /// Two ways in, by whose redirect setting applies:
  /// - on a client whose configuration Cepis sets (``cepisShared``, or one Cepis creates), with
  ///   redirects disallowed: AsyncHTTPClient's delegate API. Head, body and end arrive on the
  ///   connection's event loop and end the attempt there, as `URLSession`'s delegate does, so no
  ///   part of the exchange waits for a free thread of Swift's cooperative pool — a process whose
  ///   pool is busy still sees its answers on time;
  /// - on a caller's client, which may follow redirects anywhere (`HTTPClient.shared` follows
  ///   20, keeping custom headers such as an API key): the async API with an empty request body
  ///   that AsyncHTTPClient documents as not replayable, which makes it hand a redirect back
  ///   instead of following it. For a `GET` with an empty body nothing extra goes on the wire
  ///   (no `Content-Length`, no `Transfer-Encoding`). AsyncHTTPClient's deadline covers that
  ///   exchange only until the head arrives, so it runs in a task of its own, which the gate
  ///   cancels at the deadline. That task runs on one event loop of the caller's client, chosen
  ///   when the transport is made (``EventLoopTaskExecutor``): AsyncHTTPClient then picks that
  ///   loop for the connection, and the head, the body's parts and the end are read where they
  ///   arrive. On `HTTPClient.shared`'s group of a thread per core they would otherwise hop
  ///   between its loops and the cooperative pool part by part (Benchmarks/RESULTS.md, rows
  ///   `caller's HTTPClient.shared`). With the `Observability` trait, requests on a client of
  ///   Cepis's that traces go this way too while the caller's task carries a `ServiceContext`,
  ///   so that AsyncHTTPClient's span is a child of the call's.
  ///
  /// Either way the 3xx reaches ``HTTPExecutor``, which applies the same-origin rule, and
  /// ``withAttemptDeadline(_:_:)`` resumes the caller at its deadline or cancellation and
  /// abandons the request, which closes the connection.
  ///
  /// Proxies: AsyncHTTPClient sets one proxy per client (`Configuration.proxy`), for every host.
  /// A transport that follows ``ProxySettings`` therefore keeps one client per proxy besides its
  /// direct one and picks, request by request, the client ``ProxySettings/proxy(for:)`` names,
  /// so `no_proxy` hosts go direct. AsyncHTTPClient sends `http` URLs to the proxy in absolute
  /// form and tunnels `https` ones with `CONNECT`.
  package struct AsyncHTTPClientTransport: HTTPTransport {
    /// The event loops of every `HTTPClient` Cepis makes: one thread of its own, started on
    /// first use and kept for the whole process, never shut down (as SwiftNIO's shared group
    /// is not).
    ///
    /// One loop rather than SwiftNIO's shared group of a thread per core: moving a lookup's
    /// bytes is the small part of it next to decoding the answer, which runs on Swift's
    /// cooperative pool, so one thread keeps up with every request in flight, and answers that
    /// all arrive on one thread cost fewer hand-offs between threads. On two cores, bulk
    /// lookups and single lookups at concurrency 1 cost fewer context switches and less CPU
    /// than on the shared group; at 16 single lookups in flight against a server on the same
    /// two cores, a few percent fewer of them complete per second (the A/B of `a291762`;
    /// Benchmarks/RESULTS.md, rows `lookupMany CPU (AHC)` and `single c=16 (AHC)`). A caller
    /// who wants more threads passes an `HTTPClient` of their own.
    package static let eventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// The client behind `Transport.default` in a build with the trait: one per process, on
    /// ``eventLoopGroup``, never shut down (as `HTTPClient.shared` is not).
    ///
    /// It differs from `HTTPClient.shared` where Cepis's contract needs it to: a connection that
    /// cannot be made fails the attempt at once ("connection refused", "host not found")
    /// instead of being retried inside the pool until the deadline, so the retry loop above
    /// decides, as on every transport; and redirects are never followed by the client itself.
    package static let cepisShared = HTTPClient(
      eventLoopGroup: Self.eventLoopGroup,
      configuration: cepisConfiguration(
        HTTPClient.Configuration(timeout: .init(connect: .seconds(30)))))

    /// `configuration` as Cepis needs it: no redirects followed by the client, and connection
    /// failures reported at once.
    private static func cepisConfiguration(
      _ configuration: HTTPClient.Configuration
    ) -> HTTPClient.Configuration {
      var configuration = configuration
      configuration.redirectConfiguration = .disallow
      configuration.connectionPool.retryConnectionEstablishment = false
      configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(
        16, configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit)
      return configuration
    }

    /// The clients ``cepisShared`` is joined by, one per proxy: made on first use, kept for the
    /// whole process like it.
    private static let cepisSharedProxied = ProxiedClients(owned: false) { proxy in
      var configuration = cepisConfiguration(
        HTTPClient.Configuration(timeout: .init(connect: .seconds(30))))
      configuration.proxy = .server(host: proxy.host, port: proxy.port)
      return HTTPClient(
        eventLoopGroup: Self.eventLoopGroup, configuration: configuration)
    }

    /// The client requests go through when they go direct (or, on a caller's client, always).
    private let client: HTTPClient
    /// Whether Cepis set the client's configuration (redirects disallowed).
    private let configuredByCepis: Bool
    private let owner: Owner?
    /// Which requests go through a proxy, and the clients that reach each proxy; `nil` when
    /// every request goes through `client`.
    private let proxies: (settings: ProxySettings, clients: ProxiedClients)?
    /// On a caller's client, the ``EventLoopTaskExecutor`` its requests run on (typed loosely:
    /// task executors are newer than the oldest Apple systems Cepis supports, where requests
    /// run on the cooperative pool as before).
    private let pinned: (any Sendable)?

    /// A transport on `client`, which Cepis never shuts down.
    ///
    /// A caller's client keeps its own proxy setting, and its redirect setting is unknown, so
    /// requests go the way that keeps redirects from being followed. On ``cepisShared`` the
    /// process environment's proxies apply (read now), through the shared proxied clients.
    package init(client: HTTPClient) {
      if client === Self.cepisShared {
        self.init(sharedWith: .processEnvironment)
      } else {
        self.init(client: client, configuredByCepis: false, owner: nil, proxies: nil)
      }
    }

    private init(
      client: HTTPClient, configuredByCepis: Bool, owner: Owner?,
      proxies: (settings: ProxySettings, clients: ProxiedClients)?
    ) {
      self.client = client
      self.configuredByCepis = configuredByCepis
      self.owner = owner
      self.proxies = proxies
      if !configuredByCepis,
        #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
      {
        self.pinned = EventLoopTaskExecutor(client.eventLoopGroup.next())
      } else {
        self.pinned = nil
      }
    }

    /// A transport on ``cepisShared`` and, for requests `proxy` sends through a proxy, on a
    /// process-wide client per proxy configured like it.
    package init(sharedWith proxy: ProxySettings) {
      self.init(
        client: Self.cepisShared, configuredByCepis: true, owner: nil,
        proxies: proxy.isDirect ? nil : (proxy, Self.cepisSharedProxied))
    }

    /// A transport on a client Cepis creates from `configuration` (with redirects disallowed
    /// and connection failures reported at once) and shuts down when the last copy of this
    /// transport is released.
    ///
    /// - Parameter proxy: the proxies to use. `nil`: `configuration.proxy` when it names one,
    ///   otherwise the process environment's (read now). A proxy in the settings gets a client
    ///   of its own, made from `configuration` on first use and shut down with the rest.
    package init(configuration: HTTPClient.Configuration, proxy: ProxySettings? = nil) {
      var configuration = Self.cepisConfiguration(configuration)
      let settings = proxy ?? (configuration.proxy == nil ? .processEnvironment : nil)
      if settings != nil {
        // Settings given or read replace the configuration's proxy: direct means direct.
        configuration.proxy = nil
      }
      let client = HTTPClient(
        eventLoopGroup: Self.eventLoopGroup, configuration: configuration)
      var proxies: (settings: ProxySettings, clients: ProxiedClients)?
      if let settings, !settings.isDirect {
        let base = configuration
        proxies = (
          settings,
          ProxiedClients(owned: true) { endpoint in
            var proxied = base
            proxied.proxy = .server(host: endpoint.host, port: endpoint.port)
            return HTTPClient(
              eventLoopGroup: Self.eventLoopGroup, configuration: proxied)
          }
        )
      }
      self.init(
        client: client, configuredByCepis: true, owner: Owner(client: client), proxies: proxies)
    }

    /// The proxy a request for `url` goes through, `nil` for direct (or a caller's own setting).
    package func proxy(for url: URL) -> ProxyEndpoint? {
      proxies?.settings.proxy(for: url)
    }

    /// The client a request for `url` goes through.
    private func client(for url: URL) -> HTTPClient {
      guard let proxies, let endpoint = proxies.settings.proxy(for: url) else { return client }
      return proxies.clients.client(for: endpoint)
    }

    /// Sends `request` once (see ``HTTPTransport``).
    package func send(_ request: HTTPRequest, timeout: TimeInterval) async throws -> HTTPResponse {
      do {
        return configuredByCepis && !nestsSpans(for: request.url)
          ? try await sendThroughDelegate(request, timeout: timeout)
          : try await sendThroughAsyncAPI(request, timeout: timeout)
      } catch let rejection as TLSRejection where configuredByCepis {
        // A client Cepis configured goes where `proxy(for:)` says: the diagnosis can follow.
        throw await TLSDiagnosis.diagnose(
          rejection, url: request.url, proxy: proxy(for: request.url),
          group: client.eventLoopGroup, timeout: min(timeout, 10))
      }
    }

    /// Whether the request goes the async API's way so that AsyncHTTPClient's own span is a
    /// child of the caller's (the `Observability` trait's call span): only the async API reads
    /// the task's `ServiceContext`, the delegate API starts its span on the event loop, with
    /// none. Taken only when a context is set and the client traces through a real tracer.
    private func nestsSpans(for url: URL) -> Bool {
      #if Observability
        guard ServiceContext.current != nil, let tracer = client(for: url).tracer else {
          return false
        }
        return !(tracer is NoOpTracer)
      #else
        return false
      #endif
    }

    private func sendThroughDelegate(
      _ request: HTTPRequest, timeout: TimeInterval
    ) async throws -> HTTPResponse {
      var headers = HTTPHeaders()
      for (name, value) in request.headers { headers.add(name: name, value: value) }
      let outgoing: HTTPClient.Request
      do {
        outgoing = try HTTPClient.Request(url: request.url, method: .GET, headers: headers)
      } catch {
        throw HTTPFailure.network("invalid URL")
      }
      let client = self.client(for: request.url)
      // AsyncHTTPClient's deadline on this API covers the whole exchange, body included, and
      // fires on the event loop: no timer of our own is needed.
      return try await withAttemptDeadline(nil) { gate in
        let collector = ResponseCollector(gate: gate, limit: request.maxBodyBytes, timeout: timeout)
        let task = client.execute(
          request: outgoing, delegate: collector, eventLoop: .indifferent,
          deadline: .now() + .nanoseconds(Int64(min(timeout, 86_400) * 1e9)))
        gate.setAbort { task.cancel() }
      }
    }

    private func sendThroughAsyncAPI(
      _ request: HTTPRequest, timeout: TimeInterval
    ) async throws -> HTTPResponse {
      var outgoing = HTTPClientRequest(url: request.url.absoluteString)
      outgoing.method = .GET
      for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
      outgoing.body = .bytes(NoBytes(), length: .known(Int64(0)))
      let prepared = outgoing
      let client = self.client(for: request.url)
      let limit = request.maxBodyBytes
      let pinned = self.pinned
      return try await withAttemptDeadline(timeout) { gate in
        let run: @Sendable () async -> Void = {
          let outcome: Result<HTTPResponse, Error>
          do {
            let deadline = NIODeadline.now() + .nanoseconds(Int64(min(timeout, 86_400) * 1e9))
            outcome = .success(
              try await Self.exchange(prepared, on: client, deadline: deadline, limit: limit))
          } catch let failure as HTTPFailure {
            outcome = .failure(failure)
          } catch {
            outcome = .failure(Self.map(error, timeout: timeout))
          }
          gate.finish(outcome)
        }
        let work: Task<Void, Never>
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *),
          let executor = pinned as? EventLoopTaskExecutor
        {
          work = Task(executorPreference: executor) { await run() }
        } else {
          work = Task { await run() }
        }
        gate.setAbort { work.cancel() }
      }
    }

    fileprivate static func exchange(
      _ request: HTTPClientRequest, on client: HTTPClient, deadline: NIODeadline, limit: Int
    ) async throws -> HTTPResponse {
      let response = try await client.execute(request, deadline: deadline)
      let headers = fold(response.headers)
      var body = Data()
      if let declared = declaredLength(response.headers) {
        if declared > limit { throw HTTPFailure.bodyTooLarge(limit: limit) }
        reserveDeclaredBody(&body, length: declared)
      }
      for try await buffer in response.body {
        if body.count + buffer.readableBytes > limit {
          throw HTTPFailure.bodyTooLarge(limit: limit)
        }
        buffer.withUnsafeReadableBytes { body.append(contentsOf: $0) }
      }
      return HTTPResponse(status: Int(response.status.code), headers: headers, body: body)
    }

    /// A short, secret-free description of what went wrong on the connection.
    static func map(_ error: Error, timeout: TimeInterval) -> Error {
      if error is CancellationError { return error }
      if let error = error as? HTTPClientError {
        switch error {
        case .deadlineExceeded: return AttemptTimedOut(seconds: timeout)
        case .cancelled: return CancellationError()
        case .connectTimeout: return HTTPFailure.network("connect timed out")
        case .remoteConnectionClosed: return HTTPFailure.network("connection closed early")
        case .tlsHandshakeTimeout: return HTTPFailure.network("TLS handshake failed")
        case .readTimeout: return HTTPFailure.network("timed out")
        case .invalidURL, .emptyHost, .emptyScheme: return HTTPFailure.network("invalid URL")
        case .invalidProxyResponse: return HTTPFailure.network("proxy refused the tunnel")
        case .proxyAuthenticationRequired:
          return HTTPFailure.network("proxy authentication required")
        // A caller's client that follows redirects checks for cycles before it hands the
        // redirect back (a URL redirecting to itself).
        case .redirectCycleDetected, .redirectLimitReached: return HTTPFailure.redirectLoop
        default: return HTTPFailure.network("connection failed")
        }
      }
      if let rejection = TLSRejection(nioSSL: error) { return rejection }
      if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
        return HTTPFailure.network("TLS handshake failed")
      }
      if let error = error as? NIOConnectionError {
        if error.connectionErrors.isEmpty { return HTTPFailure.network("host not found") }
        return HTTPFailure.network(
          error.connectionErrors.map { describe($0.error) }.first ?? "connection failed")
      }
      if error is SocketAddressError { return HTTPFailure.network("host not found") }
      return HTTPFailure.network(describe(error))
    }

    private static func describe(_ error: Error) -> String {
      if let error = error as? IOError {
        switch error.errnoCode {
        case ECONNREFUSED: return "connection refused"
        case ECONNRESET, EPIPE: return "connection reset"
        case ETIMEDOUT: return "timed out"
        case ENETUNREACH, EHOSTUNREACH: return "network unreachable"
        default: return "I/O error \(error.errnoCode)"
        }
      }
      if error is ChannelError { return "connection closed early" }
      if error is NIOSSLError || error is BoringSSLError { return "TLS handshake failed" }
      return "connection failed"
    }
  }

  /// The body length `fields` announce, if any: a body longer than the limit is refused
  /// before it is read, and room is made for one within it.
  func declaredLength(_ fields: HTTPHeaders) -> Int? {
    fields.first(name: "content-length").flatMap(contentLength)
  }

  /// Header fields with lowercased names; repeated fields fold into one, as RFC 9110 allows (and
  /// as URLSession reports them).
  func fold(_ fields: HTTPHeaders) -> [String: String] {
    var headers: [String: String] = [:]
    for (name, value) in fields {
      let key = name.lowercased()
      if let existing = headers[key] {
        headers[key] = existing + ", " + value
      } else {
        headers[key] = value
      }
    }
    return headers
  }

  /// The clients that reach each proxy, made on first use.
  ///
  /// `@unchecked Sendable` is sound: `clients` is a `LockedValue`, `make` is `@Sendable`.
  private final class ProxiedClients: @unchecked Sendable {
    private let clients = LockedValue([ProxyEndpoint: HTTPClient]())
    private let make: @Sendable (ProxyEndpoint) -> HTTPClient
    /// Whether the clients are shut down with this object (a transport's own) or kept for the
    /// process (``AsyncHTTPClientTransport/cepisShared``'s companions).
    private let owned: Bool

    init(owned: Bool, make: @escaping @Sendable (ProxyEndpoint) -> HTTPClient) {
      self.owned = owned
      self.make = make
    }

    func client(for endpoint: ProxyEndpoint) -> HTTPClient {
      clients.withLock { clients in
        if let client = clients[endpoint] { return client }
        let client = make(endpoint)
        clients[endpoint] = client
        return client
      }
    }

    deinit {
      guard owned else { return }
      for client in clients.withLock({ Array($0.values) }) {
        client.shutdown { _ in }
      }
    }
  }

  /// Shuts down a client Cepis created once nothing uses it any more.
  private final class Owner: Sendable {
    let client: HTTPClient

    init(client: HTTPClient) {
      self.client = client
    }

    deinit {
      let client = self.client
      client.shutdown { _ in }
    }
  }
#endif
