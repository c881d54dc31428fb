import Foundation

/// A TLS handshake that failed for a reason another attempt cannot fix: the server's
/// certificate, or a server that does not speak TLS at all.
///
/// Transports throw it instead of ``HTTPFailure/network(_:)``; ``HTTPExecutor`` ends the call
/// with it at once, as a network failure with ``message``, and never retries it. Every
/// transport words the same reason the same way.
package struct TLSRejection: Error, Sendable, Equatable {
  /// What was wrong.
  package enum Reason: Sendable, Equatable, CaseIterable {
    /// No trusted authority issued the certificate.
    case unknownAuthority
    /// The certificate has expired or is not valid yet.
    case expired
    /// The certificate does not name the host the client asked for.
    case hostName
    /// The certificate is not for server authentication (its extended key usage).
    case purpose
    /// The certificate was refused, and the TLS library does not say why (swift-nio-ssl
    /// reports an unknown authority, an expired certificate and one for another purpose alike;
    /// `TLSDiagnosis` names it where it can follow the connection's route).
    case untrusted
    /// The server answered the handshake with something other than TLS (plain HTTP, say).
    case notTLS
  }

  /// What was wrong.
  package let reason: Reason

  /// Creates the rejection.
  package init(_ reason: Reason) {
    self.reason = reason
  }

  /// The message the caller sees, the same on every transport.
  package var message: String {
    switch reason {
    case .unknownAuthority:
      return "TLS certificate rejected: not issued by a trusted certificate authority"
    case .expired: return "TLS certificate rejected: expired or not yet valid"
    case .hostName: return "TLS certificate rejected: not valid for the host name"
    case .purpose: return "TLS certificate rejected: not for server authentication"
    case .untrusted:
      return "TLS certificate rejected: not trusted (an unknown authority, an expired "
        + "certificate or one not for server authentication)"
    case .notTLS: return "TLS handshake failed: the server does not speak TLS"
    }
  }

  /// The rejection libcurl's error text describes (FoundationNetworking keeps it as the error's
  /// description), `nil` when the text names none of them.
  package init?(libcurlDescription text: String) {
    let text = text.lowercased()
    func has(_ any: String...) -> Bool { any.contains { text.contains($0) } }
    if has("unable to get local issuer", "self-signed", "self signed", "unable to get issuer") {
      self.init(.unknownAuthority)
    } else if has("has expired", "not yet valid") {
      self.init(.expired)
    } else if has("subject name", "host name", "hostname") {
      self.init(.hostName)
    } else if has("certificate purpose") {
      // OpenSSL 3 says "unsuitable certificate purpose", earlier versions "unsupported …".
      self.init(.purpose)
    } else if has("wrong version number", "packet length too long", "unknown protocol") {
      self.init(.notTLS)
    } else {
      return nil
    }
  }

  /// The rejection a BoringSSL error stack's text describes (swift-nio-ssl's
  /// `NIOSSLError.handshakeFailed`), `nil` when it names none of them.
  package init?(boringSSLDescription text: String) {
    if text.contains("CERTIFICATE_VERIFY_FAILED") {
      self.init(.untrusted)
    } else if text.contains("WRONG_VERSION_NUMBER") || text.contains("PACKET_LENGTH_TOO_LONG") {
      self.init(.notTLS)
    } else {
      return nil
    }
  }
}
