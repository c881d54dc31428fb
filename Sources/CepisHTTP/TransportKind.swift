import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The transports a build has, named as the command line and the version text name them.
package enum TransportKind: String, Sendable, CaseIterable {
  /// Foundation's `URLSession` (FoundationNetworking on Linux).
  case urlSession = "urlsession"
  /// swift-server/async-http-client, on SwiftNIO; only with the `AsyncHTTPClient` trait.
  case asyncHTTPClient = "async-http-client"

  /// The transports this build was compiled with, the default first.
  package static var available: [TransportKind] {
    #if AsyncHTTPClient
      [.asyncHTTPClient, .urlSession]
    #else
      [.urlSession]
    #endif
  }

  /// `Transport.default`: AsyncHTTPClient when the build has it, URLSession otherwise.
  package static var preferred: TransportKind { available[0] }

  /// A new transport of this kind with its default settings, or `nil` when the build lacks it.
  package func make() -> (any HTTPTransport)? {
    switch self {
    case .urlSession:
      return URLSessionTransport(configuration: .default)
    case .asyncHTTPClient:
      #if AsyncHTTPClient
        return AsyncHTTPClientTransport(client: AsyncHTTPClientTransport.cepisShared)
      #else
        return nil
      #endif
    }
  }
}
