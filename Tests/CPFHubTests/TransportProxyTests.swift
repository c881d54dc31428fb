import CPFHub
import CepisTestSupport
import Foundation
import Testing

/// `Transport.make(_:proxy:)` through `import CPFHub` alone: an HTTP proxy for every transport,
/// nothing else.
@Suite("Transport.make(_:proxy:) from CPFHub")
struct TransportProxyTests {
  @Test("an http:// proxy gives the transport named", arguments: testedTransportKinds)
  func httpProxy(kind: Transport.Kind) throws {
    let proxy = try #require(URL(string: "http://proxy.corp:3128"))
    #expect(Transport.make(kind, proxy: proxy)?.kind == kind)
    let socks = try #require(URL(string: "socks5://proxy.corp:1080"))
    #expect(Transport.make(kind, proxy: socks) == nil)
  }
}
