import CPFHub
import Foundation
import Testing

/// `CPFClient.Transport.named(_:proxy:)`: an HTTP proxy for every transport, nothing else.
@Suite("CPFClient.Transport.named(_:proxy:)")
struct TransportProxyTests {
  @Test("an http:// proxy gives the transport named", arguments: CPFClient.Transport.availableNames)
  func httpProxy(name: String) throws {
    let proxy = try #require(URL(string: "http://proxy.corp:3128"))
    #expect(CPFClient.Transport.named(name, proxy: proxy)?.description == name)
    let socks = try #require(URL(string: "socks5://proxy.corp:1080"))
    #expect(CPFClient.Transport.named(name, proxy: socks) == nil)
  }
}
