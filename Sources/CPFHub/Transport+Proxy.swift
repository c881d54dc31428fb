import CepisHTTP
import Foundation

extension CPFClient.Transport {
  /// The transport called `name` (`urlsession`, `async-http-client`) with its default settings,
  /// sending every request through the HTTP proxy `proxy` (`CONNECT` for `https`) except hosts
  /// the environment's `no_proxy` lists; `nil` when this build lacks it or `proxy` is not an
  /// `http://` proxy URL.
  ///
  /// Without it, every transport Cepis creates reads `http_proxy`, `https_proxy`, `all_proxy`
  /// and `no_proxy` as curl does; `proxy` takes the place of the first three. On Linux,
  /// `URLSession` takes its proxy from the process environment only, so there a URLSession
  /// transport refuses, as a network error, a request the environment would route otherwise.
  public static func named(_ name: String, proxy: URL) -> CPFClient.Transport? {
    guard let endpoint = ProxyEndpoint(parsing: proxy.absoluteString),
      let kind = TransportKind(rawValue: name),
      let base = kind.make(
        proxy: ProxySettings(environment: ProcessInfo.processInfo.environment, proxy: endpoint))
    else { return nil }
    return CPFClient.Transport(description: kind.rawValue, base: base)
  }
}
