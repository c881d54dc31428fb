#if AsyncHTTPClient
  import BrazilianDocuments
  import CPFHub
  import CepisMock
  import CepisTestSupport
  import Foundation
  import Testing

  @testable import CepisMock

  /// `CPFClient.lookup` over HTTPS: chain and host name verified against an authority made for
  /// the test, direct and through a `CONNECT` proxy; a certificate problem is not retried.
  @Suite("CPFClient over HTTPS")
  struct CPFHTTPSTests {
    @Test("a lookup over HTTPS", arguments: trustRootsTransportKinds, [false, true])
    func lookup(kind: Transport.Kind, throughProxy: Bool) async throws {
      try await withTLSMock(.acceptingTestKey) { mock in
        let proxy = throughProxy ? try ForwardProxy(upstreamPort: mock.relay.port) : nil
        defer { proxy?.stop() }
        let transport = try #require(
          try Transport.make(
            kind, proxy: proxy.flatMap { URL(string: $0.url) }, trustRoots: mock.trustRoots))
        let client = CPFClient(
          apiKey: testKey, baseURL: mock.baseURL, timeout: 30, maxAttempts: 1,
          transport: transport)
        let known = knownPerson(mock.server)
        let person = try await client.lookup(known.cpf)
        #expect(person.name == known.name)
        #expect(mock.server.requests.map(wireTransport) == [kind])
        if let proxy {
          #expect(proxy.relayed == ["CONNECT localhost:\(mock.relay.port)"])
        }
      }
    }

    @Test(
      "a certificate for another host ends the lookup at once, without the key in the message",
      arguments: trustRootsTransportKinds)
    func otherHost(kind: Transport.Kind) async throws {
      try await withTLSMock(.acceptingTestKey, profile: .otherHost) { mock in
        let transport = try #require(try Transport.make(kind, trustRoots: mock.trustRoots))
        let client = CPFClient(
          apiKey: testKey, baseURL: mock.baseURL, timeout: 30, maxAttempts: 3,
          backoffBase: 0.01, transport: transport)
        let error = await expectCPFHubError {
          try await client.lookup(knownPerson(mock.server).cpf)
        }
        #expect(
          error == .networkError(message: expectedTLSMessage(kind, .otherHost, trusted: true)))
        #expect(!"\(String(describing: error))".contains(testKey))
        #expect(mock.relay.acceptedConnections == 1)
      }
    }
  }
#endif
