import CepisHTTP
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif
#if AsyncHTTPClient
  import AsyncHTTPClient
#endif

/// How a ``Client`` sends its requests: Foundation's `URLSession`, or — in a build with the
/// package trait `AsyncHTTPClient` — swift-server's `HTTPClient` on SwiftNIO.
///
/// The transport only carries single attempts. Retries, the retry budget, `Retry-After`, both
/// deadlines, the body cap, the same-origin redirect rule and every error are handled above
/// it, once, so a client behaves the same on either transport.
///
/// ```swift
/// let client = Client(transport: .urlSession())
/// // With the AsyncHTTPClient trait, on a server already running SwiftNIO:
/// let server = Client(transport: .asyncHTTPClient(app.http.client.shared))
/// ```
///
/// A transport holds its connections: clients made with the same `Transport` value share
/// them. A caller's `HTTPClient` is never shut down by Cepis; one Cepis creates
/// (`asyncHTTPClient(configuration:)`, with the trait) is shut down when the last client using it is gone.
public struct Transport: Sendable, CustomStringConvertible {
  /// The transports a build can have.
  public enum Kind: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Foundation's `URLSession` (FoundationNetworking on Linux): always available.
    case urlSession = "urlsession"
    /// swift-server/async-http-client: only in builds with the `AsyncHTTPClient` trait.
    case asyncHTTPClient = "async-http-client"

    /// The name used on the command line: `urlsession` or `async-http-client`.
    public var description: String { rawValue }
  }

  /// Which transport this is.
  public let kind: Kind
  let base: any HTTPTransport

  init(kind: Kind, base: any HTTPTransport) {
    self.kind = kind
    self.base = base
  }

  /// The transport's name: `urlsession` or `async-http-client`.
  public var description: String { kind.rawValue }

  /// The kinds this build has, the default first.
  public static var availableKinds: [Kind] {
    TransportKind.available.compactMap { Kind(rawValue: $0.rawValue) }
  }

  /// The transport clients use when none is given.
  ///
  /// In a build with the `AsyncHTTPClient` trait: AsyncHTTPClient, on an `HTTPClient` that
  /// Cepis keeps for the whole process on SwiftNIO's shared event loops (the same threads as
  /// `HTTPClient.shared`). Unlike `HTTPClient.shared`, that client fails an attempt at once
  /// when a connection cannot be made ("connection refused", "host not found") rather than
  /// retrying inside its pool until the deadline, so Cepis's own retry loop decides, as on
  /// `URLSession`. Otherwise: ``urlSession(_:)`` with the default configuration.
  public static var `default`: Transport {
    make(Kind(rawValue: TransportKind.preferred.rawValue) ?? .urlSession) ?? .urlSession()
  }

  /// A transport of `kind` with its default settings, or `nil` when this build lacks it.
  public static func make(_ kind: Kind) -> Transport? {
    guard let core = TransportKind(rawValue: kind.rawValue), let base = core.make() else {
      return nil
    }
    return Transport(kind: kind, base: base)
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
    /// within the same origin only. Its connection pool, TLS, proxy and decompression settings
    /// do — among them `connectionPool.retryConnectionEstablishment`: when it is `true`
    /// (AsyncHTTPClient's default, and `HTTPClient.shared`'s), a connection that cannot be made
    /// is retried inside the client until the attempt's deadline and then reported as a
    /// timeout, instead of failing at once.
    public static func asyncHTTPClient(_ client: HTTPClient = .shared) -> Transport {
      Transport(kind: .asyncHTTPClient, base: AsyncHTTPClientTransport(client: client))
    }

    /// An AsyncHTTPClient transport on a new `HTTPClient` made with `configuration`, shut down
    /// once no client uses this transport any more.
    ///
    /// Two settings are Cepis's, whatever `configuration` says: the client follows no redirect
    /// (Cepis does, within the same origin) and reports a connection that cannot be made at
    /// once (`connectionPool.retryConnectionEstablishment` off), so that Cepis's retry loop
    /// decides. TLS, proxy, pool size, timeouts and decompression are yours.
    public static func asyncHTTPClient(configuration: HTTPClient.Configuration) -> Transport {
      Transport(
        kind: .asyncHTTPClient, base: AsyncHTTPClientTransport(configuration: configuration))
    }
  #endif
}
