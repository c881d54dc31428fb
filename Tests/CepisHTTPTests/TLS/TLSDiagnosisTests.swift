#if AsyncHTTPClient
  import CepisMock
  import Foundation
  import Testing
  import X509

  @testable import CepisHTTP

  /// How a refused chain is named on AsyncHTTPClient (swift-nio-ssl says only that it was
  /// refused): certificates of each profile an authority made here, at moments on an injected
  /// clock.
  @Suite("TLSDiagnosis: why a chain was refused")
  struct TLSDiagnosisTests {
    static func leaf(_ profile: MockCertificateAuthority.Profile) throws -> Certificate {
      try Certificate(pemEncoded: try MockCertificateAuthority().issue(profile).certificatePEM)
    }

    @Test(
      "each profile's certificate, refused now, is named by what is wrong with it",
      arguments: [
        (MockCertificateAuthority.Profile.valid, TLSRejection.Reason.unknownAuthority),
        (.expired, .expired),
        (.clientAuthOnly, .purpose),
      ])
    func profiles(profile: MockCertificateAuthority.Profile, reason: TLSRejection.Reason) throws {
      #expect(TLSDiagnosis.reason(chain: [try Self.leaf(profile)], now: Date()) == reason)
    }

    @Test(
      "a certificate outside its validity is expired, before or after it; inside, the authority is unknown",
      arguments: [-86_400.0, -1, 1, 86_400])
    func validityEdges(offset: TimeInterval) throws {
      let leaf = try Self.leaf(.valid)
      // `offset` seconds outside the validity: before its start when negative, after its end
      // when positive.
      let outside = offset < 0 ? leaf.notValidBefore + offset : leaf.notValidAfter + offset
      #expect(TLSDiagnosis.reason(chain: [leaf], now: outside) == .expired)
      let inside = offset < 0 ? leaf.notValidBefore - offset : leaf.notValidAfter - offset
      #expect(TLSDiagnosis.reason(chain: [leaf], now: inside) == .unknownAuthority)
    }

    @Test("an expired authority behind a valid certificate makes the chain expired")
    func expiredIssuer() throws {
      let leaf = try Self.leaf(.valid)
      let expired = try Self.leaf(.expired)
      #expect(TLSDiagnosis.reason(chain: [leaf, expired], now: Date()) == .expired)
      #expect(TLSDiagnosis.reason(chain: [], now: Date()) == .unknownAuthority)
    }
  }
#endif
