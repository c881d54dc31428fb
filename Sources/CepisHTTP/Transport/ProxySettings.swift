import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A forward HTTP proxy: where a request goes instead of its origin (absolute-form for `http`,
/// a `CONNECT` tunnel for `https`).
package struct ProxyEndpoint: Sendable, Hashable, CustomStringConvertible {
  /// The proxy's host name or IP address (an IPv6 address without brackets).
  package var host: String
  /// The proxy's TCP port.
  package var port: Int

  /// Creates an endpoint.
  package init(host: String, port: Int) {
    self.host = host
    self.port = port
  }

  /// `host:port` (`[v6]:port` for an IPv6 address).
  package var description: String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  }

  /// The port curl assumes for a proxy named without one.
  package static let defaultPort = 1080

  /// Parses a proxy as curl's variables and `--proxy` write it: `[http://][user:pass@]host[:port]`.
  ///
  /// `nil` for an empty value and for what this core cannot speak to (an `https://` or
  /// `socks…://` proxy, a malformed value): see ``ProxySettings`` for what that means.
  package init?(parsing value: String) {
    var text = Substring(value.trimmingCharacters(in: .whitespaces))
    guard !text.isEmpty else { return nil }
    if let range = text.range(of: "://") {
      guard text[..<range.lowerBound].lowercased() == "http" else { return nil }
      text = text[range.upperBound...]
    }
    // Only the authority counts: a path (`http://proxy:3128/`) is ignored, as curl does.
    if let slash = text.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
      text = text[..<slash]
    }
    if let at = text.lastIndex(of: "@") { text = text[text.index(after: at)...] }
    var host: Substring
    var portText: Substring?
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else { return nil }
      host = text[text.index(after: text.startIndex)..<close]
      let rest = text[text.index(after: close)...]
      if !rest.isEmpty {
        guard rest.hasPrefix(":") else { return nil }
        portText = rest.dropFirst()
      }
    } else if let colon = text.lastIndex(of: ":") {
      host = text[..<colon]
      portText = text[text.index(after: colon)...]
    } else {
      host = text
    }
    guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "@" }) else { return nil }
    var port = Self.defaultPort
    if let portText {
      guard let number = Int(portText), (1...65_535).contains(number) else { return nil }
      port = number
    }
    self.init(host: String(host), port: port)
  }
}

/// Which proxy, if any, a request goes through: curl's reading of the environment, in one
/// pure value that every transport Cepis creates consults.
///
/// The rules, as curl (7.88) applies them:
/// - `http://` URLs use `http_proxy` — lowercase only: curl never reads `HTTP_PROXY`, which a
///   CGI server sets from a request's `Proxy:` header;
/// - `https://` URLs use `https_proxy`, else `HTTPS_PROXY`;
/// - when the scheme's variable is unset, `all_proxy`, else `ALL_PROXY`;
/// - a variable set to the empty string counts as unset;
/// - a proxy is `[http://][user:pass@]host[:port]`; without a scheme it is `http://`, without
///   a port it is 1080 (curl's default);
/// - `no_proxy`, else `NO_PROXY`, lists hosts that go direct, separated by commas or spaces:
///   `*` alone sends every host direct; a name matches itself and every name below it
///   (`example.com` and `.example.com` both match `example.com` and `api.example.com`, never
///   `notexample.com`), without regard to case or a trailing dot; an IP address matches
///   itself, and `10.0.0.0/8` or `fd00::/8` a network.
///
/// One extension: an entry with a port (`example.com:8080`, `[::1]:8080`) matches that port
/// only. curl ignores such an entry (it never matches), so on Linux, where FoundationNetworking
/// leaves proxies to libcurl, ``URLSessionTransport`` refuses a request the two would route
/// differently rather than send it the wrong way.
///
/// What is not supported is ignored, as if unset: an `https://` or `socks…://` proxy and
/// proxy credentials (`user:pass@` is dropped). An explicit proxy (`--proxy`) takes the place
/// of the three proxy variables; `no_proxy` still applies to it, as it does in curl.
package struct ProxySettings: Sendable, Hashable {
  /// The proxy for `http://` URLs.
  package var httpProxy: ProxyEndpoint?
  /// The proxy for `https://` URLs (reached with `CONNECT`).
  package var httpsProxy: ProxyEndpoint?
  /// Whether `no_proxy` is `*`.
  package var bypassesEveryHost: Bool
  /// The entries of `no_proxy`, in order.
  package var noProxy: [NoProxyEntry]
  /// Whether an entry's port is honoured (`false`: curl's reading, where such an entry never
  /// matches).
  package var honoursPorts: Bool

  /// No proxy at all: every request goes direct.
  static let direct = ProxySettings(
    httpProxy: nil, httpsProxy: nil, bypassesEveryHost: false, noProxy: [], honoursPorts: true)

  /// Creates settings from their parts.
  package init(
    httpProxy: ProxyEndpoint?, httpsProxy: ProxyEndpoint?, bypassesEveryHost: Bool,
    noProxy: [NoProxyEntry], honoursPorts: Bool = true
  ) {
    self.httpProxy = httpProxy
    self.httpsProxy = httpsProxy
    self.bypassesEveryHost = bypassesEveryHost
    self.noProxy = noProxy
    self.honoursPorts = honoursPorts
  }

  /// The settings `environment` describes (see the type's rules); `proxy`, when given, takes
  /// the place of `http_proxy`, `https_proxy` and `all_proxy` (`no_proxy` still applies).
  package init(environment: [String: String], proxy: ProxyEndpoint? = nil) {
    func variable(_ name: String) -> String? {
      guard let value = environment[name], !value.isEmpty else { return nil }
      return value
    }
    let all = variable("all_proxy") ?? variable("ALL_PROXY")
    if let proxy {
      httpProxy = proxy
      httpsProxy = proxy
    } else {
      httpProxy = (variable("http_proxy") ?? all).flatMap(ProxyEndpoint.init(parsing:))
      httpsProxy = (variable("https_proxy") ?? variable("HTTPS_PROXY") ?? all)
        .flatMap(ProxyEndpoint.init(parsing:))
    }
    let list = variable("no_proxy") ?? variable("NO_PROXY") ?? ""
    bypassesEveryHost = list.trimmingCharacters(in: .whitespaces) == "*"
    noProxy = bypassesEveryHost ? [] : NoProxyEntry.parseList(list)
    honoursPorts = true
  }

  /// The process environment's settings, read when asked (every transport Cepis creates with
  /// its defaults reads them once, when it is made).
  package static var processEnvironment: ProxySettings {
    ProxySettings(environment: ProcessInfo.processInfo.environment)
  }

  /// Whether no URL goes through a proxy.
  var isDirect: Bool { httpProxy == nil && httpsProxy == nil }

  /// The proxy `url` goes through, or `nil` to go direct.
  func proxy(for url: URL) -> ProxyEndpoint? {
    guard !isDirect, let scheme = url.scheme?.lowercased() else { return nil }
    let candidate: ProxyEndpoint?
    switch scheme {
    case "http": candidate = httpProxy
    case "https": candidate = httpsProxy
    default: candidate = nil
    }
    guard let candidate, let rawHost = url.host, !bypassesEveryHost else { return nil }
    let port = url.port ?? (scheme == "https" ? 443 : 80)
    let host = NoProxyEntry.normalizedHost(rawHost)
    for entry in noProxy where entry.matches(host: host, port: port, honouringPorts: honoursPorts) {
      return nil
    }
    return candidate
  }

  /// These settings as curl reads them: entries with a port never match.
  var asCurlReadsThem: ProxySettings {
    var copy = self
    copy.honoursPorts = false
    return copy
  }
}

/// One entry of `no_proxy`.
package struct NoProxyEntry: Sendable, Hashable {
  /// What the entry names.
  package enum Pattern: Sendable, Hashable {
    /// A host name and every name below it (lowercased, without leading or trailing dot).
    case domain(String)
    /// An IP address (4 or 16 bytes) and how many leading bits must match.
    case network(address: [UInt8], bits: Int)
  }

  /// The host part.
  package var pattern: Pattern
  /// The port, when the entry names one.
  package var port: Int?

  /// Creates an entry.
  package init(pattern: Pattern, port: Int?) {
    self.pattern = pattern
    self.port = port
  }

  /// The entries of a `no_proxy` value (commas and white space separate them; entries that are
  /// not host names or addresses are skipped).
  package static func parseList(_ list: String) -> [NoProxyEntry] {
    list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" })
      .compactMap { NoProxyEntry(parsing: String($0)) }
  }

  /// Parses one entry: `name`, `.name`, `name:port`, `1.2.3.4`, `10.0.0.0/8`, `::1`,
  /// `[::1]:port`, `fd00::/8`.
  package init?(parsing token: String) {
    var text = Substring(token)
    var port: Int?
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else { return nil }
      let rest = text[text.index(after: close)...]
      if rest.hasPrefix(":"), let number = Int(rest.dropFirst()) { port = number }
      text = text[text.index(after: text.startIndex)..<close]
    } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
      // One colon: `host:port` (an IPv6 address has several).
      guard let number = Int(text[text.index(after: colon)...]) else { return nil }
      port = number
      text = text[..<colon]
    }
    var bits: Int?
    if let slash = text.firstIndex(of: "/") {
      guard let number = Int(text[text.index(after: slash)...]), number >= 0 else { return nil }
      bits = number
      text = text[..<slash]
    }
    if let address = Self.ipBytes(String(text)) {
      let width = address.count * 8
      self.init(pattern: .network(address: address, bits: min(bits ?? width, width)), port: port)
      return
    }
    guard bits == nil else { return nil }
    let name = Self.normalizedHost(String(text.drop(while: { $0 == "." })))
    guard !name.isEmpty else { return nil }
    self.init(pattern: .domain(name), port: port)
  }

  /// Whether a request to `host` (already ``normalizedHost(_:)``) on `port` goes direct.
  package func matches(host: String, port: Int, honouringPorts: Bool) -> Bool {
    if let own = self.port {
      guard honouringPorts, own == port else { return false }
    }
    switch pattern {
    case .domain(let name):
      return host == name || host.hasSuffix("." + name)
    case .network(let network, let bits):
      guard let address = Self.ipBytes(host), address.count == network.count else { return false }
      var remaining = bits
      for (mine, theirs) in zip(address, network) where remaining > 0 {
        let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
        if mine & mask != theirs & mask { return false }
        remaining -= 8
      }
      return true
    }
  }

  /// A host as entries are compared with it: lowercased, without brackets or a trailing dot.
  package static func normalizedHost(_ host: String) -> String {
    var text = Substring(host.lowercased())
    if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
    while text.hasSuffix(".") { text = text.dropLast() }
    return String(text)
  }

  /// The bytes of an IPv4 or IPv6 address in text, or `nil` when `text` is not one.
  static func ipBytes(_ text: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 {
      return withUnsafeBytes(of: &v4) { Array($0) }
    }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 {
      return withUnsafeBytes(of: &v6) { Array($0) }
    }
    return nil
  }
}

extension Transport.Kind {
  /// A new transport of this kind whose requests follow `proxy` instead of the process
  /// environment, or `nil` when the build lacks the kind.
  ///
  /// URLSession: a transport of its own. AsyncHTTPClient: on
  /// ``AsyncHTTPClientTransport/cepisShared`` for direct requests and on a process-wide client
  /// per proxy for the others, like the default transport.
  func makeBase(proxy: ProxySettings) -> (any HTTPTransport)? {
    switch self {
    case .urlSession:
      return URLSessionTransport(configuration: .default, proxy: proxy)
    case .asyncHTTPClient:
      #if AsyncHTTPClient
        return AsyncHTTPClientTransport(sharedWith: proxy)
      #else
        return nil
      #endif
    }
  }
}
