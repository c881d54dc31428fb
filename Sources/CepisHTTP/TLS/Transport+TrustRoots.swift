import Foundation

extension Transport {
  /// A transport of `kind` that trusts the certificate authorities in `trustRoots` (PEM, one
  /// or more `CERTIFICATE` blocks) besides the system's, optionally through the HTTP proxy
  /// `proxy`; `nil` when this build lacks `kind` or `proxy` is not an `http://` proxy URL.
  ///
  /// For a network that inspects TLS with its own authority (many corporate networks do):
  /// chains are still verified, and host names still checked, against the system's roots and
  /// these.
  ///
  /// - AsyncHTTPClient: the certificates join the system's roots (swift-nio-ssl's additional
  ///   trust roots), on a client of this transport's own.
  /// - URLSession on Apple platforms: a server-trust challenge handler evaluates the chain
  ///   with these certificates added to the system's anchors, under the SSL policy for the
  ///   host asked for.
  /// - URLSession on Linux: FoundationNetworking offers no per-session roots (libcurl reads
  ///   the system bundle), so `trustRoots` are **not** applied there: add the authority to the
  ///   system store (`/usr/local/share/ca-certificates` and `update-ca-certificates` on
  ///   Debian and Ubuntu), or use the AsyncHTTPClient transport.
  ///
  /// Without `proxy`, proxies follow the process environment, as in ``make(_:proxy:)``.
  ///
  /// ```swift
  /// let pem = try Data(contentsOf: URL(fileURLWithPath: "/etc/corp/root-ca.pem"))
  /// let client = Client(transport: try Transport.make(.asyncHTTPClient, trustRoots: pem)!)
  /// ```
  ///
  /// - Throws: ``TrustRootsError`` when `trustRoots` holds no readable certificate.
  public static func make(
    _ kind: Kind, proxy: URL? = nil, trustRoots: Data
  ) throws(TrustRootsError) -> Transport? {
    let roots = try TrustRoots(pem: trustRoots)
    let settings: ProxySettings
    if let proxy {
      guard let endpoint = ProxyEndpoint(parsing: proxy.absoluteString) else { return nil }
      settings = ProxySettings(environment: ProcessInfo.processInfo.environment, proxy: endpoint)
    } else {
      settings = .processEnvironment
    }
    guard let base = try kind.makeBase(proxy: settings, trustRoots: roots) else { return nil }
    return Transport(kind: kind, base: base)
  }
}

extension Transport.Kind {
  /// A new transport of this kind whose requests follow `proxy` and that trusts `trustRoots`
  /// besides the system's roots (see ``Transport/make(_:proxy:trustRoots:)``), or `nil` when
  /// the build lacks the kind.
  ///
  /// - Throws: ``TrustRootsError`` when the TLS library cannot read a certificate.
  func makeBase(
    proxy: ProxySettings, trustRoots: TrustRoots
  ) throws(TrustRootsError) -> (any HTTPTransport)? {
    switch self {
    case .urlSession:
      return URLSessionTransport(configuration: .default, proxy: proxy, trustRoots: trustRoots)
    case .asyncHTTPClient:
      #if AsyncHTTPClient
        return try AsyncHTTPClientTransport(proxy: proxy, trustRoots: trustRoots)
      #else
        return nil
      #endif
    }
  }
}
