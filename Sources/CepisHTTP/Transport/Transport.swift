import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif
#if AsyncHTTPClient
  import AsyncHTTPClient
#endif

/// How a client — `Client` (module `Cepis`) or `CPFClient` (module `CPFHub`) — sends its
/// requests: Foundation's `URLSession`, or, in a build with the package trait
/// `AsyncHTTPClient`, swift-server's `HTTPClient` on SwiftNIO.
///
/// A transport only carries single attempts. Retries, the ``RetryBudget``, `Retry-After`, both
/// deadlines, the body cap, the same-origin redirect rule and every error are handled above it,
/// once, for both clients, so a client behaves the same on every transport.
///
/// One value serves both clients, and they then share its connections:
///
/// ```swift
/// import Cepis
/// import CPFHub
///
/// let transport: Transport = .default
/// let budget: RetryBudget = .standard
/// let cep = Client(transport: transport, retryBudget: budget)
/// let cpf = CPFClient(apiKey: key, transport: transport, retryBudget: budget)
/// ```
///
/// `import Cepis` or `import CPFHub` alone is enough to use this type: both modules re-export
/// the module that defines it.
///
/// A caller's `HTTPClient` is never shut down by Cepis; one Cepis creates
/// (`asyncHTTPClient(configuration:)`, with the trait) is shut down when the last client using
/// it is gone.
public struct Transport: Sendable, CustomStringConvertible {
  /// The transports a build can have.
  public enum Kind: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Foundation's `URLSession` (FoundationNetworking on Linux): always available.
    case urlSession = "urlsession"
    /// swift-server/async-http-client: only in builds with the `AsyncHTTPClient` trait.
    case asyncHTTPClient = "async-http-client"

    /// The name used on the command line and in `cepis --version`: `urlsession` or
    /// `async-http-client`.
    public var description: String { rawValue }

    /// Whether this build has the transport.
    public var isAvailable: Bool { Transport.availableKinds.contains(self) }
  }

  /// Which transport this is.
  public let kind: Kind
  /// What carries the attempts.
  package let base: any HTTPTransport
  /// The buckets of the ``RateLimit``s of the clients built on this value.
  package let pacers: PacerRegistry
  /// The allowances of the services other than the clients' own API (the fallbacks) that
  /// the clients built on this value ask.
  package let allowances: AllowanceRegistry

  /// A transport of `kind` carried by `base`.
  package init(kind: Kind, base: any HTTPTransport) {
    self.kind = kind
    self.base = base
    self.pacers = PacerRegistry()
    self.allowances = AllowanceRegistry()
  }

  /// The transport's name: `urlsession` or `async-http-client`.
  public var description: String { kind.rawValue }

  /// The kinds this build has, the default first.
  public static var availableKinds: [Kind] {
    #if AsyncHTTPClient
      [.asyncHTTPClient, .urlSession]
    #else
      [.urlSession]
    #endif
  }

  /// The transport clients use when none is given.
  ///
  /// In a build with the `AsyncHTTPClient` trait: AsyncHTTPClient, on one `HTTPClient` that
  /// Cepis keeps for the whole process, on one event loop thread of its own, and that every
  /// `Client` and `CPFClient` on the default transport shares. Unlike `HTTPClient.shared`,
  /// that client fails an attempt at once when a connection cannot be made ("connection
  /// refused", "host not found") rather than retrying inside its pool until the deadline, so
  /// the clients' own retry loop decides, as on `URLSession`. Otherwise: ``urlSession(_:)``
  /// with the default configuration.
  ///
  /// One value for the whole process: the clients built on it share its connections, those
  /// with the same ``RateLimit`` share one bucket, and those with the same fallback share its
  /// budget.
  public static var `default`: Transport { processDefault }

  private static let processDefault: Transport = make(availableKinds[0]) ?? .urlSession()

  /// A transport of `kind` with its default settings, or `nil` when this build lacks it.
  ///
  /// `make(.asyncHTTPClient)` is the process-wide client of ``default``.
  ///
  /// ```swift
  /// for kind in Transport.availableKinds {
  ///   let client = Client(transport: Transport.make(kind)!)
  /// }
  /// ```
  public static func make(_ kind: Kind) -> Transport? {
    switch kind {
    case .urlSession:
      return .urlSession()
    case .asyncHTTPClient:
      #if AsyncHTTPClient
        return Transport(
          kind: .asyncHTTPClient,
          base: AsyncHTTPClientTransport(client: AsyncHTTPClientTransport.cepisShared))
      #else
        return nil
      #endif
    }
  }

  /// A `URLSession` transport.
  ///
  /// The client makes its own session from `configuration` (proxies, cookies, additional
  /// headers are kept) with a delegate of its own, because only a delegate sees a body as it
  /// arrives: that is how the size cap holds against an endless body. The configuration's
  /// cache and timeouts are not used; the client enforces its own deadlines.
  public static func urlSession(_ configuration: URLSessionConfiguration = .default) -> Transport {
    Transport(kind: .urlSession, base: URLSessionTransport(configuration: configuration))
  }

  #if AsyncHTTPClient
    /// An AsyncHTTPClient transport on `client`, which Cepis never shuts down.
    ///
    /// The client's redirect configuration does not apply: redirects are followed by Cepis,
    /// within the same origin only (an API key never follows a redirect to another host). Its
    /// connection pool, TLS, proxy and decompression settings do — among them
    /// `connectionPool.retryConnectionEstablishment`: when it is `true` (AsyncHTTPClient's
    /// default, and `HTTPClient.shared`'s), a connection that cannot be made is retried inside
    /// the client until the attempt's deadline and then reported as a timeout, instead of
    /// failing at once.
    ///
    /// ```swift
    /// // On a server already running SwiftNIO:
    /// let client = Client(transport: .asyncHTTPClient(app.http.client.shared))
    /// ```
    public static func asyncHTTPClient(_ client: HTTPClient = .shared) -> Transport {
      Transport(kind: .asyncHTTPClient, base: AsyncHTTPClientTransport(client: client))
    }

    /// An AsyncHTTPClient transport on a new `HTTPClient` made with `configuration`, shut down
    /// once no client uses this transport any more.
    ///
    /// Two settings are Cepis's, whatever `configuration` says: the client follows no redirect
    /// (Cepis does, within the same origin) and reports a connection that cannot be made at
    /// once (`connectionPool.retryConnectionEstablishment` off), so that the retry loop decides.
    /// TLS, proxy, pool size, timeouts and decompression are yours. The client runs on the
    /// same single event loop thread as ``default``'s.
    public static func asyncHTTPClient(configuration: HTTPClient.Configuration) -> Transport {
      Transport(
        kind: .asyncHTTPClient, base: AsyncHTTPClientTransport(configuration: configuration))
    }
  #endif
}
