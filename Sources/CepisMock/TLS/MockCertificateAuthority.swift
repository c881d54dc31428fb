#if AsyncHTTPClient
  import Crypto
  import Foundation
  import SwiftASN1
  import X509

  /// A certificate authority made in memory when it is created, for tests over TLS: its own
  /// key, never written anywhere, and the server certificates it issues for CepisMock's TLS
  /// front (``MockTLSRelay``). Only in builds with the `AsyncHTTPClient` trait.
  ///
  /// Every authority is new: a client trusts it only when the test hands its certificate
  /// (``certificatePEM``) to the client, and a certificate from another authority is one from
  /// an unknown authority.
  ///
  /// ```swift
  /// let authority = try MockCertificateAuthority()
  /// let relay = try await MockTLSRelay.start(
  ///   forwardingTo: server.port, serving: try authority.issue(.valid))
  /// let transport = try Transport.make(
  ///   .asyncHTTPClient, trustRoots: Data(authority.certificatePEM.utf8))
  /// ```
  public struct MockCertificateAuthority: Sendable {
    /// What a server certificate is made to be: good, or wrong in one way a client must refuse.
    public enum Profile: String, Sendable, CaseIterable, CustomStringConvertible {
      /// Valid now, for `localhost` and `127.0.0.1`, for server authentication.
      case valid
      /// Like ``valid``, but its validity ended a day ago.
      case expired
      /// Like ``valid``, but for the host `cepis.invalid` only.
      case otherHost = "other-host"
      /// Like ``valid``, but its extended key usage allows client authentication only.
      case clientAuthOnly = "client-auth-only"

      /// The profile's name, as the command line spells it.
      public var description: String { rawValue }
    }

    /// A certificate and its private key, both in PEM, as a TLS server loads them.
    public struct ServerIdentity: Sendable {
      /// The certificate, in PEM.
      public let certificatePEM: String
      /// Its private key (PKCS #8), in PEM.
      public let privateKeyPEM: String
    }

    private let key: P256.Signing.PrivateKey
    private let name: DistinguishedName
    private let keyIdentifier: ArraySlice<UInt8>

    /// The authority's own (self-signed) certificate, in PEM: what a client adds to its trust
    /// roots.
    public let certificatePEM: String

    /// Creates an authority, valid from an hour ago for thirty days.
    ///
    /// - Throws: an error of swift-certificates if the certificate cannot be made.
    public init(commonName: String = "CepisMock Test CA") throws {
      let key = P256.Signing.PrivateKey()
      let name = try DistinguishedName { CommonName(commonName) }
      let publicKey = Certificate.PublicKey(key.publicKey)
      let identifier = SubjectKeyIdentifier(hash: publicKey)
      let now = Date()
      let certificate = try Certificate(
        version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
        notValidBefore: now - 3_600, notValidAfter: now + 30 * 86_400,
        issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
        extensions: try Certificate.Extensions {
          Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
          Critical(KeyUsage(keyCertSign: true, cRLSign: true))
          identifier
        },
        issuerPrivateKey: Certificate.PrivateKey(key))
      self.key = key
      self.name = name
      self.keyIdentifier = identifier.keyIdentifier
      self.certificatePEM = try certificate.serializeAsPEM().pemString
    }

    /// Issues a server certificate of `profile` with a new key.
    ///
    /// - Throws: an error of swift-certificates if the certificate cannot be made.
    public func issue(_ profile: Profile) throws -> ServerIdentity {
      let leafKey = P256.Signing.PrivateKey()
      let publicKey = Certificate.PublicKey(leafKey.publicKey)
      let now = Date()
      let validity: (from: Date, to: Date) =
        profile == .expired
        ? (now - 2 * 86_400, now - 86_400) : (now - 3_600, now + 30 * 86_400)
      let names: [GeneralName] =
        profile == .otherHost
        ? [.dnsName("cepis.invalid")]
        : [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]
      let usage: ExtendedKeyUsage.Usage = profile == .clientAuthOnly ? .clientAuth : .serverAuth
      let subject = try DistinguishedName {
        CommonName(profile == .otherHost ? "cepis.invalid" : "localhost")
      }
      let certificate = try Certificate(
        version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
        notValidBefore: validity.from, notValidAfter: validity.to,
        issuer: name, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
        extensions: try Certificate.Extensions {
          Critical(BasicConstraints.notCertificateAuthority)
          Critical(KeyUsage(digitalSignature: true))
          try ExtendedKeyUsage([usage])
          SubjectAlternativeNames(names)
          AuthorityKeyIdentifier(keyIdentifier: keyIdentifier)
          SubjectKeyIdentifier(hash: publicKey)
        },
        issuerPrivateKey: Certificate.PrivateKey(key))
      return ServerIdentity(
        certificatePEM: try certificate.serializeAsPEM().pemString,
        privateKeyPEM: leafKey.pemRepresentation)
    }

    /// Writes ``certificatePEM`` to a new file in the temporary folder and returns its URL:
    /// what `curl --cacert` and `cepis --cacert` read.
    ///
    /// - Throws: the file system's error.
    public func writeCertificate() throws -> URL {
      let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("cepis-mock-ca-\(UUID().uuidString).pem")
      try Data(certificatePEM.utf8).write(to: url)
      return url
    }
  }
#endif
