import CepisHTTP
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif
#if AsyncHTTPClient
  import AsyncHTTPClient
#endif

extension CPFClient {
  /// How a ``CPFClient`` sends its requests: Foundation's `URLSession`, or — in a build with
  /// the package trait `AsyncHTTPClient` — swift-server's `HTTPClient` on SwiftNIO.
  ///
  /// The same transports as `Cepis.Transport`, built on the same core: retries, deadlines,
  /// the body cap, the same-origin redirect rule (the API key never follows a redirect to
  /// another origin) and every error are handled above the transport, identically on each.
  ///
  /// ```swift
  /// let client = CPFClient(transport: .urlSession())
  /// ```
  public struct Transport: Sendable, CustomStringConvertible {
    /// The transport's name: `urlsession` or `async-http-client`.
    public let description: String
    let base: any HTTPTransport

    /// The names of the transports this build has, the default first.
    public static var availableNames: [String] { TransportKind.available.map(\.rawValue) }

    /// `asyncHTTPClient(_:)` on `HTTPClient.shared` in a build with the `AsyncHTTPClient`
    /// trait, otherwise ``urlSession(_:)``.
    public static var `default`: Transport {
      named(TransportKind.preferred.rawValue) ?? .urlSession()
    }

    /// The transport called `name` (`urlsession`, `async-http-client`) with its default
    /// settings, or `nil` when this build lacks it.
    public static func named(_ name: String) -> Transport? {
      guard let kind = TransportKind(rawValue: name), let base = kind.make() else { return nil }
      return Transport(description: kind.rawValue, base: base)
    }

    /// A `URLSession` transport; only `configuration`'s proxies, cookies and headers are used
    /// (the client streams bodies through its own delegate and enforces its own deadlines).
    public static func urlSession(_ configuration: URLSessionConfiguration = .default) -> Transport
    {
      Transport(
        description: TransportKind.urlSession.rawValue,
        base: URLSessionTransport(configuration: configuration))
    }

    #if AsyncHTTPClient
      /// An AsyncHTTPClient transport on `client`, which is never shut down by Cepis; its
      /// redirect configuration does not apply (redirects stay within the same origin).
      public static func asyncHTTPClient(_ client: HTTPClient = .shared) -> Transport {
        Transport(
          description: TransportKind.asyncHTTPClient.rawValue,
          base: AsyncHTTPClientTransport(client: client))
      }

      /// An AsyncHTTPClient transport on a new `HTTPClient`, shut down once no client uses it;
      /// it follows no redirect itself and reports connection failures at once, whatever
      /// `configuration` says (the rest of `configuration` applies).
      public static func asyncHTTPClient(configuration: HTTPClient.Configuration) -> Transport {
        Transport(
          description: TransportKind.asyncHTTPClient.rawValue,
          base: AsyncHTTPClientTransport(configuration: configuration))
      }
    #endif
  }
}
