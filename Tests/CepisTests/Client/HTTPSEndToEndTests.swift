import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

#if AsyncHTTPClient
  @testable import CepisMock

  /// Every call of `Client` over HTTPS against CepisMock behind a TLS relay, chain and host name
  /// verified against an authority made for the test and given as trust roots, direct and
  /// through a `CONNECT` proxy.
  @Suite("HTTPS end to end")
  struct HTTPSEndToEndTests {
    @Test(
      "lookup, lookupMany, lookups, health and both fallbacks over HTTPS",
      arguments: trustRootsTransportKinds, [false, true])
    func everyCall(kind: Transport.Kind, throughProxy: Bool) async throws {
      try await withTLSMock { mock in
        let proxy = throughProxy ? try ForwardProxy(upstreamPort: mock.relay.port) : nil
        defer { proxy?.stop() }
        let transport = try #require(
          try Transport.make(
            kind, proxy: proxy.flatMap { URL(string: $0.url) }, trustRoots: mock.trustRoots))
        let client = Client(
          baseURL: mock.baseURL, timeout: 30, maxAttempts: 1, transport: transport)
        let server = mock.server

        let ceps = Array(server.dataset.sampleCEPs.prefix(2))
        try #require(ceps.count == 2)
        #expect(try await client.lookup(ceps[0]) == expectedAddress(server, ceps[0]))
        let many = try await client.lookupMany(ceps)
        #expect(many == ceps.map { expectedAddress(server, $0, withGeo: false) })
        #expect(many.allSatisfy { $0 != nil })
        var streamed = 0
        for try await answer in client.lookups(ceps) {
          if case .success(let address?) = answer.result,
            address == expectedAddress(server, answer.row, withGeo: false)
          {
            streamed += 1
          }
        }
        #expect(streamed == 2)
        #expect(try await client.health().ok)

        server.setMode(.cep, [.status(503)])
        for fallback in [
          Fallback.viaCEP(baseURL: mock.baseURL, budget: .unlimited),
          Fallback.brasilAPI(baseURL: mock.baseURL, budget: .unlimited),
        ] {
          let viaFallback = Client(
            baseURL: mock.baseURL, timeout: 30, maxAttempts: 1, transport: transport,
            fallbacks: [fallback])
          let answer = try await viaFallback.lookup(ceps[0])
          #expect(answer.cep.filter(\.isNumber) == ceps[0].filter(\.isNumber))
        }
        #expect(requests(server, on: .viaCEP).count == 1)
        #expect(requests(server, on: .brasilAPI).count == 1)
        #expect(server.requests.allSatisfy { wireTransport($0) == kind })
        if let proxy {
          let tunnel = "CONNECT localhost:\(mock.relay.port)"
          #expect(!proxy.relayed.isEmpty)
          #expect(proxy.relayed.allSatisfy { $0 == tunnel }, "\(proxy.relayed)")
        }
      }
    }

    @Test(
      "a certificate problem ends a lookup as a network error that names it, with no request and no retry",
      arguments: trustRootsTransportKinds,
      [MockCertificateAuthority.Profile.expired, .otherHost, .clientAuthOnly])
    func rejectedCertificate(
      kind: Transport.Kind, profile: MockCertificateAuthority.Profile
    ) async throws {
      try await withTLSMock(profile: profile) { mock in
        let transport = try #require(try Transport.make(kind, trustRoots: mock.trustRoots))
        let client = Client(
          baseURL: mock.baseURL, timeout: 30, maxAttempts: 3, backoffBase: 0.01,
          transport: transport)
        await #expect(
          throws: CepisError.networkError(
            message: expectedTLSMessage(kind, profile, trusted: true))
        ) {
          try await client.lookup("01001000")
        }
        #expect(
          mock.relay.acceptedConnections == connectionsForRejection(kind, profile, trusted: true))
        #expect(mock.server.requests.isEmpty)
      }
    }
  }

#endif

/// `Transport.make(_:proxy:trustRoots:)`'s refusals of what is not a certificate.
@Suite("Transport.make(_:trustRoots:)")
struct TrustRootsInputTests {
  @Test(
    "PEM without a readable certificate is a typed error",
    arguments: [
      ("", "no PEM certificate found"),
      ("hello", "no PEM certificate found"),
      ("-----BEGIN CERTIFICATE-----\nAAAA", "certificate 1 never ends"),
      (
        "-----BEGIN CERTIFICATE-----\n@@@\n-----END CERTIFICATE-----",
        "certificate 1 is not base64"
      ),
    ])
  func unreadable(pem: String, reason: String) {
    for kind in testedTransportKinds {
      #expect(throws: TrustRootsError(reason: reason)) {
        try Transport.make(kind, trustRoots: Data(pem.utf8))
      }
    }
  }

  #if AsyncHTTPClient
    @Test("base64 that is not a certificate is refused by AsyncHTTPClient's TLS")
    func notACertificate() {
      let pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
      #expect(throws: TrustRootsError(reason: "certificate 1 is not an X.509 certificate")) {
        try Transport.make(.asyncHTTPClient, trustRoots: Data(pem.utf8))
      }
    }
  #endif
}
