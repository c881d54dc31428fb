import Foundation

/// Certificate authorities a transport trusts besides the system's, as DER certificates read
/// from PEM.
package struct TrustRoots: Sendable, Equatable {
  /// Each certificate, DER-encoded, in the order the PEM held them.
  package let certificates: [Data]

  /// Reads every `CERTIFICATE` block of `pem` (text outside the blocks, such as the comments of
  /// a CA bundle, is ignored).
  ///
  /// - Throws: ``TrustRootsError`` when `pem` holds no certificate, or a block that is not
  ///   base64 or never ends.
  package init(pem: Data) throws(TrustRootsError) {
    guard let text = String(data: pem, encoding: .utf8) else {
      throw TrustRootsError(reason: "not PEM text")
    }
    let begin = "-----BEGIN CERTIFICATE-----"
    let end = "-----END CERTIFICATE-----"
    var certificates: [Data] = []
    var rest = text[...]
    while let start = rest.range(of: begin) {
      guard let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) else {
        throw TrustRootsError(reason: "certificate \(certificates.count + 1) never ends")
      }
      let body = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
      guard let der = Data(base64Encoded: String(body)), !der.isEmpty else {
        throw TrustRootsError(reason: "certificate \(certificates.count + 1) is not base64")
      }
      certificates.append(der)
      rest = rest[stop.upperBound...]
    }
    guard !certificates.isEmpty else { throw TrustRootsError(reason: "no PEM certificate found") }
    self.certificates = certificates
  }
}

/// Why certificates given as trust roots (``Transport/make(_:proxy:trustRoots:)``) cannot be
/// used.
public struct TrustRootsError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What is wrong with them: "no PEM certificate found", "certificate 2 is not base64", …
  public let reason: String

  /// Creates the error.
  package init(reason: String) {
    self.reason = reason
  }

  /// `invalid trust roots: ` and the reason.
  public var description: String { "invalid trust roots: \(reason)" }
}
