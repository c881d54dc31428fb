import Foundation

extension Transport {
  /// A transport of `kind` with its default settings that sends every request through the
  /// HTTP proxy `proxy` (`CONNECT` for `https`), except hosts the environment's `no_proxy`
  /// lists; `nil` when this build lacks `kind` or `proxy` is not an `http://` proxy URL.
  ///
  /// Without it, every transport Cepis creates (``default``, ``make(_:)``, ``urlSession(_:)``
  /// on a configuration that names no proxy) reads `http_proxy`, `https_proxy`, `all_proxy`
  /// and `no_proxy` as curl does; `proxy` takes the place of the first three.
  ///
  /// ```swift
  /// let transport = Transport.make(.urlSession, proxy: URL(string: "http://proxy.corp:3128"))
  /// ```
  ///
  /// On Linux, `URLSession` takes its proxy from the process environment only (libcurl reads
  /// it), so there a URLSession transport with `proxy` refuses, as a network error, a request
  /// the environment would route otherwise: export `https_proxy` and `http_proxy`, or use the
  /// AsyncHTTPClient transport.
  public static func make(_ kind: Kind, proxy: URL) -> Transport? {
    guard let endpoint = ProxyEndpoint(parsing: proxy.absoluteString),
      let base = kind.makeBase(
        proxy: ProxySettings(environment: ProcessInfo.processInfo.environment, proxy: endpoint))
    else { return nil }
    return Transport(kind: kind, base: base)
  }
}
