import CepisHTTP
import CepisMock
import Foundation

/// The transports that apply trust roots given to `Transport.make(_:proxy:trustRoots:)` in this
/// process, so a test can trust an authority made at test time: AsyncHTTPClient everywhere,
/// URLSession on Apple platforms only. FoundationNetworking on Linux trusts the system's bundle
/// alone; the command-line tests prove URLSession over TLS there, in a child process that sees
/// a bundle with the test authority in a private mount namespace.
public let trustRootsTransportKinds: [Transport.Kind] = testedTransportKinds.filter { kind in
  #if canImport(FoundationNetworking)
    kind != .urlSession
  #else
    true
  #endif
}

#if AsyncHTTPClient
  /// CepisMock over HTTPS: a plain ``MockServer`` behind a ``MockTLSRelay`` that presents a
  /// certificate from an authority made for this test alone.
  public struct TLSMock: Sendable {
    /// The plain server behind the relay: its routes, faults and log.
    public let server: MockServer
    /// The TLS front: its port and how many connections it accepted.
    public let relay: MockTLSRelay
    /// The authority that issued the relay's certificate.
    public let authority: MockCertificateAuthority

    /// `https://localhost:PORT` (`http://` when the relay speaks no TLS).
    public var baseURL: URL { relay.baseURL }

    /// The authority's certificate in PEM, as `Transport.make(_:proxy:trustRoots:)` takes it.
    public var trustRoots: Data { Data(authority.certificatePEM.utf8) }
  }

  /// Starts CepisMock and a TLS relay in front of it presenting a certificate of `profile`
  /// (`nil`: a relay that speaks plain HTTP), runs `body`, and always stops both.
  public func withTLSMock<T>(
    _ configuration: MockServer.Configuration = .init(),
    profile: MockCertificateAuthority.Profile? = .valid,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (TLSMock) async throws -> T
  ) async throws -> T {
    try await MockServer.withServer(configuration, isolation: isolation) { server in
      let authority = try MockCertificateAuthority()
      let identity = try profile.map { try authority.issue($0) }
      let relay = try await MockTLSRelay.start(forwardingTo: server.port, serving: identity)
      do {
        let result = try await body(TLSMock(server: server, relay: relay, authority: authority))
        await relay.stop()
        return result
      } catch {
        await relay.stop()
        throw error
      }
    }
  }

  /// The message a transport of `kind` gives for a server certificate of `profile` (or, for
  /// `nil`, a server that speaks plain HTTP): the same words for the same reason on every
  /// transport Cepis configures.
  public func expectedTLSMessage(
    _ kind: Transport.Kind, _ profile: MockCertificateAuthority.Profile?, trusted: Bool
  ) -> String {
    let reason: TLSRejection.Reason
    switch (profile, trusted) {
    case (nil, _): reason = .notTLS
    case (.otherHost, true): reason = .hostName
    case (.expired, true): reason = .expired
    case (.clientAuthOnly, true): reason = .purpose
    default: reason = .unknownAuthority
    }
    return TLSRejection(reason).message
  }

  /// The connections a refused certificate of `profile` costs a transport of `kind`: one, and
  /// on AsyncHTTPClient one more where swift-nio-ssl does not say why (an unknown authority,
  /// an expired certificate, one for another purpose) — a handshake that reads the chain and
  /// sends no request (`TLSDiagnosis`).
  public func connectionsForRejection(
    _ kind: Transport.Kind, _ profile: MockCertificateAuthority.Profile?, trusted: Bool
  ) -> Int {
    guard kind == .asyncHTTPClient, let profile else { return 1 }
    return trusted && profile == .otherHost ? 1 : 2
  }
#endif
