#if AsyncHTTPClient
  import CepisTestSupport
  import Foundation
  import Testing

  @testable import CepisHTTP
  @testable import CepisMock

  /// The TLS part of the transport contract, against CepisMock behind a TLS relay whose
  /// certificates come from an authority made for each test: a good certificate is verified
  /// (chain and host name) and the answer read; each certificate problem ends the call at once,
  /// as a network failure that says what was wrong, after exactly one connection.
  ///
  /// Trusting the test's authority needs a transport that applies trust roots in this process
  /// (``trustRootsTransportKinds``); an unknown authority and a server that speaks plain HTTP
  /// need no trust, and run over every transport.
  @Suite("Transport conformance: TLS", .serialized)
  struct TransportTLSConformanceTests {
    @Test(
      "a certificate from a trusted authority for the host: verified, and the answer read",
      arguments: trustRootsTransportKinds)
    func validCertificate(kind: Transport.Kind) async throws {
      try await withTLSMock { mock in
        let executor = try tlsExecutor(kind, trustRoots: mock.trustRoots, maxAttempts: 1)
        let response = try await executor.perform(cepRequest(mock.baseURL))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).contains(#""cep":"01001000""#))
        #expect(mock.server.requests.map(wireTransport) == [kind])
        #expect(mock.relay.acceptedConnections == 1)
      }
    }

    @Test(
      "an expired certificate, one for another host, one not for server authentication: one connection, no retry",
      arguments: trustRootsTransportKinds,
      [MockCertificateAuthority.Profile.expired, .otherHost, .clientAuthOnly])
    func rejectedCertificate(
      kind: Transport.Kind, profile: MockCertificateAuthority.Profile
    ) async throws {
      try await withTLSMock(profile: profile) { mock in
        let executor = try tlsExecutor(kind, trustRoots: mock.trustRoots, maxAttempts: 3)
        let (outcome, _) = await measure { try await executor.perform(cepRequest(mock.baseURL)) }
        #expect(
          outcome.failure == .network(expectedTLSMessage(kind, profile, trusted: true)),
          "\(outcome)")
        #expect(
          mock.relay.acceptedConnections == connectionsForRejection(kind, profile, trusted: true))
        #expect(mock.server.requests.isEmpty)
      }
    }

    @Test(
      "a certificate from an unknown authority: one connection, no retry",
      arguments: testedTransportKinds)
    func unknownAuthority(kind: Transport.Kind) async throws {
      try await withTLSMock { mock in
        // Trusting another authority than the one that issued the server's certificate.
        let other = try MockCertificateAuthority(commonName: "Another CA")
        // (URLSession on Linux applies no trust roots: it knows neither authority.)
        let executor = try tlsExecutor(
          kind, trustRoots: Data(other.certificatePEM.utf8), maxAttempts: 3)
        let (outcome, _) = await measure { try await executor.perform(cepRequest(mock.baseURL)) }
        #expect(
          outcome.failure == .network(expectedTLSMessage(kind, .valid, trusted: false)),
          "\(outcome)")
        #expect(
          mock.relay.acceptedConnections == connectionsForRejection(kind, .valid, trusted: false))
        #expect(mock.server.requests.isEmpty)
      }
    }

    @Test(
      "a server that speaks plain HTTP on an https URL: one connection, no retry",
      arguments: testedTransportKinds)
    func plainHTTPServer(kind: Transport.Kind) async throws {
      try await withTLSMock(profile: nil) { mock in
        let url = try #require(URL(string: "https://localhost:\(mock.relay.port)"))
        let executor = try makeExecutor(kind, attemptTimeout: 30, maxAttempts: 3)
        let (outcome, _) = await measure { try await executor.perform(cepRequest(url)) }
        #expect(
          outcome.failure == .network(expectedTLSMessage(kind, nil, trusted: true)), "\(outcome)")
        #expect(mock.relay.acceptedConnections == 1)
      }
    }

    @Test(
      "https through a CONNECT proxy: the tunnel asked of the proxy, the chain verified",
      arguments: trustRootsTransportKinds)
    func throughProxy(kind: Transport.Kind) async throws {
      try await withTLSMock { mock in
        let proxy = try ForwardProxy(upstreamPort: mock.relay.port)
        defer { proxy.stop() }
        let settings = ProxySettings(environment: ["https_proxy": proxy.url])
        let executor = try tlsExecutor(
          kind, trustRoots: mock.trustRoots, maxAttempts: 1, proxy: settings)
        let response = try await executor.perform(cepRequest(mock.baseURL))
        #expect(response.status == 200)
        #expect(proxy.relayed == ["CONNECT localhost:\(mock.relay.port)"])
      }
    }
  }

  extension TransportTLSConformanceTests {
    @Test(
      "a refused certificate through a CONNECT proxy: the same words as direct, no request",
      arguments: trustRootsTransportKinds,
      [MockCertificateAuthority.Profile.expired, .clientAuthOnly])
    func rejectedThroughProxy(
      kind: Transport.Kind, profile: MockCertificateAuthority.Profile
    ) async throws {
      try await withTLSMock(profile: profile) { mock in
        let proxy = try ForwardProxy(upstreamPort: mock.relay.port)
        defer { proxy.stop() }
        let settings = ProxySettings(environment: ["https_proxy": proxy.url])
        let executor = try tlsExecutor(
          kind, trustRoots: mock.trustRoots, maxAttempts: 3, proxy: settings)
        let (outcome, _) = await measure { try await executor.perform(cepRequest(mock.baseURL)) }
        #expect(
          outcome.failure == .network(expectedTLSMessage(kind, profile, trusted: true)),
          "\(outcome)")
        let connections = connectionsForRejection(kind, profile, trusted: true)
        #expect(mock.relay.acceptedConnections == connections)
        #expect(
          proxy.relayed
            == Array(repeating: "CONNECT localhost:\(mock.relay.port)", count: connections))
        #expect(mock.server.requests.isEmpty)
      }
    }
  }

  /// An executor on a new transport of `kind` that trusts `trustRoots` besides the system's.
  func tlsExecutor(
    _ kind: Transport.Kind, trustRoots: Data, maxAttempts: Int,
    proxy: ProxySettings = .direct
  ) throws -> HTTPExecutor {
    let roots = try TrustRoots(pem: trustRoots)
    let transport = try #require(try kind.makeBase(proxy: proxy, trustRoots: roots))
    return HTTPExecutor(
      policy: RetryPolicy(
        maxAttempts: maxAttempts, backoffBase: 0, backoffMax: 0, attemptTimeout: 30,
        totalTimeout: nil),
      transport: transport, budget: nil)
  }

  /// A `GET` of the cep route under `base`.
  func cepRequest(_ base: URL) -> HTTPRequest {
    HTTPRequest(
      url: base.appendingPathComponent("01001000"), headers: [("Accept", "application/json")],
      maxBodyBytes: 1 << 20)
  }
#endif
