import Foundation
import Testing

@testable import CepisHTTP

/// curl's reading of the proxy variables, checked on injected environments (the process
/// environment is never touched).
@Suite("Proxy settings from the environment")
struct ProxySettingsTests {
  func route(_ environment: [String: String], _ url: String) -> String {
    guard let url = URL(string: url) else { return "bad URL" }
    return ProxySettings(environment: environment).proxy(for: url)?.description ?? "direct"
  }

  @Test("each scheme reads its own variable; HTTP_PROXY in capitals is never read")
  func schemeVariables() {
    #expect(route(["http_proxy": "p1:3128"], "http://a.example/x") == "p1:3128")
    #expect(route(["http_proxy": "p1:3128"], "https://a.example/x") == "direct")
    #expect(route(["HTTP_PROXY": "p1:3128"], "http://a.example/x") == "direct")
    #expect(route(["https_proxy": "p2:8080"], "https://a.example/x") == "p2:8080")
    #expect(route(["HTTPS_PROXY": "p2:8080"], "https://a.example/x") == "p2:8080")
    #expect(route(["https_proxy": "low:1", "HTTPS_PROXY": "up:2"], "https://a.example") == "low:1")
    #expect(route(["https_proxy": "p2:8080"], "http://a.example/x") == "direct")
  }

  @Test("all_proxy (either case) is the fallback; an empty variable counts as unset")
  func allProxyFallback() {
    #expect(route(["all_proxy": "all:1"], "http://a.example") == "all:1")
    #expect(route(["ALL_PROXY": "all:1"], "https://a.example") == "all:1")
    #expect(route(["all_proxy": "low:1", "ALL_PROXY": "up:2"], "http://a.example") == "low:1")
    #expect(route(["http_proxy": "http:1", "all_proxy": "all:2"], "http://a.example") == "http:1")
    #expect(route(["http_proxy": "", "ALL_PROXY": "all:2"], "http://a.example") == "all:2")
    #expect(route(["https_proxy": "", "HTTPS_PROXY": "up:2"], "https://a.example") == "up:2")
    #expect(route(["HTTP_PROXY": "x:1", "all_proxy": "all:2"], "http://a.example") == "all:2")
    #expect(route([:], "http://a.example") == "direct")
  }

  @Test(
    "a proxy is [http://][user:pass@]host[:port]; 1080 without a port",
    arguments: [
      ("proxy.corp", "proxy.corp:1080"),
      ("proxy.corp:3128", "proxy.corp:3128"),
      ("http://proxy.corp:3128", "proxy.corp:3128"),
      ("HTTP://proxy.corp:3128/", "proxy.corp:3128"),
      ("http://user:secret@proxy.corp:3128", "proxy.corp:3128"),
      ("http://[::1]:3128", "[::1]:3128"),
      ("10.1.2.3", "10.1.2.3:1080"),
      (" http://proxy.corp:3128 ", "proxy.corp:3128"),
    ])
  func proxyForms(value: String, expected: String) {
    #expect(ProxyEndpoint(parsing: value)?.description == expected)
  }

  @Test(
    "what cannot be spoken to is ignored",
    arguments: [
      "", "https://proxy.corp:443", "socks5://proxy.corp:1080", "proxy.corp:0",
      "proxy.corp:99999", "proxy.corp:port", "http://", "[::1",
    ])
  func unsupportedProxies(value: String) {
    #expect(ProxyEndpoint(parsing: value) == nil)
    #expect(route(["http_proxy": value], "http://a.example") == "direct")
  }

  @Test(
    "no_proxy: host, domain suffix (with or without a leading dot), IP, network, port, *",
    arguments: [
      // (no_proxy, URL, goes direct)
      ("example.com", "http://example.com/", true),
      ("example.com", "http://api.example.com/", true),
      ("example.com", "http://notexample.com/", false),
      (".example.com", "http://example.com/", true),
      (".example.com", "http://a.b.example.com:8080/", true),
      ("EXAMPLE.com.", "http://Api.Example.COM./", true),
      ("other.org, example.com", "http://example.com/", true),
      ("other.org example.com", "http://example.com/", true),
      ("other.org", "http://example.com/", false),
      ("*", "http://anything.example/", true),
      (" * ", "http://anything.example/", true),
      ("other.org,*", "http://anything.example/", false),
      ("127.0.0.1", "http://127.0.0.1:8080/", true),
      ("127.0.0.1", "http://127.0.0.2/", false),
      ("127.0.0.0/8", "http://127.9.9.9/", true),
      ("10.0.0.0/8", "http://11.0.0.1/", false),
      ("192.168.1.0/24", "http://192.168.1.77/", true),
      ("::1", "http://[::1]:8080/", true),
      ("fd00::/8", "http://[fd12::1]/", true),
      ("fd00::/8", "http://[fe80::1]/", false),
      ("example.com:8080", "http://example.com:8080/", true),
      ("example.com:8080", "http://example.com/", false),
      ("example.com:443", "https://api.example.com/", true),
      ("[::1]:8080", "http://[::1]:8080/", true),
      ("[::1]:8080", "http://[::1]:9090/", false),
      ("", "http://example.com/", false),
      (",,,", "http://example.com/", false),
    ])
  func noProxy(list: String, url: String, direct: Bool) {
    let environment = ["http_proxy": "proxy:3128", "https_proxy": "proxy:3128", "no_proxy": list]
    #expect((route(environment, url) == "direct") == direct, "\(list) for \(url)")
  }

  @Test("no_proxy wins over NO_PROXY; NO_PROXY alone is read")
  func noProxyCase() {
    let base = ["http_proxy": "proxy:3128"]
    #expect(route(base.merging(["NO_PROXY": "a.example"]) { $1 }, "http://a.example") == "direct")
    #expect(
      route(
        base.merging(["no_proxy": "b.example", "NO_PROXY": "a.example"]) { $1 }, "http://a.example")
        == "proxy:3128")
  }

  @Test("an explicit proxy replaces the proxy variables; no_proxy still applies")
  func explicitProxy() throws {
    let explicit = try #require(ProxyEndpoint(parsing: "http://cli.proxy:8888"))
    let settings = ProxySettings(
      environment: ["http_proxy": "env:1", "no_proxy": "internal.example"], proxy: explicit)
    #expect(settings.proxy(for: URL(string: "http://a.example")!) == explicit)
    #expect(settings.proxy(for: URL(string: "https://a.example")!) == explicit)
    #expect(settings.proxy(for: URL(string: "https://internal.example")!) == nil)
  }

  @Test("curl's reading differs only for entries with a port, which it never matches")
  func curlReading() {
    let settings = ProxySettings(
      environment: ["http_proxy": "p:1", "no_proxy": "a.example:8080,b.example"])
    let curl = settings.asCurlReadsThem
    let portURL = URL(string: "http://a.example:8080/")!
    let plainURL = URL(string: "http://b.example/")!
    #expect(settings.proxy(for: portURL) == nil)
    #expect(curl.proxy(for: portURL)?.description == "p:1")
    #expect(settings.proxy(for: plainURL) == curl.proxy(for: plainURL))
  }

  @Test("only http and https URLs are proxied; .direct sends everything direct")
  func otherSchemes() {
    #expect(route(["all_proxy": "p:1"], "ftp://a.example/") == "direct")
    #expect(ProxySettings.direct.isDirect)
    #expect(ProxySettings.direct.proxy(for: URL(string: "http://a.example")!) == nil)
  }
}
