import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// `Transport.make(_:proxy:)`: an HTTP proxy for every transport kind, nothing else.
@Suite("Transport.make(_:proxy:)")
struct TransportProxyTests {
  @Test("an http:// proxy gives a transport of the kind asked", arguments: testedTransportKinds)
  func httpProxy(kind: Transport.Kind) throws {
    let proxy = try #require(URL(string: "http://proxy.corp:3128"))
    #expect(Transport.make(kind, proxy: proxy)?.kind == kind)
  }

  @Test(
    "a proxy Cepis cannot speak to gives no transport",
    arguments: ["https://proxy.corp:443", "socks5://proxy.corp:1080", "http://proxy.corp:0"])
  func unsupportedProxy(text: String) throws {
    let proxy = try #require(URL(string: text))
    for kind in testedTransportKinds {
      #expect(Transport.make(kind, proxy: proxy) == nil)
    }
  }
}
