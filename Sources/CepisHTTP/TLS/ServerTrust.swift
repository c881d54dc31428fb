#if canImport(Security)
  import Foundation
  import Security

  /// The server-trust evaluation of a `URLSession` transport made with trust roots, on Apple
  /// platforms: the system's anchors and the roots, the SSL policy for the host the task asked
  /// for (so host names are still checked). Not compiled on Linux, where FoundationNetworking
  /// offers no per-session roots.
  enum ServerTrust {
    /// What to answer `challenge`: the default handling for anything but server trust; for
    /// server trust, the trust as a credential when the chain verifies with `roots` added to
    /// the system's anchors, and otherwise a cancelled challenge (a failed handshake) and
    /// what was wrong with the certificate.
    static func evaluate(
      _ challenge: URLAuthenticationChallenge, adding roots: TrustRoots
    ) -> (URLSession.AuthChallengeDisposition, URLCredential?, TLSRejection?) {
      let space = challenge.protectionSpace
      guard space.authenticationMethod == NSURLAuthenticationMethodServerTrust,
        let trust = space.serverTrust
      else { return (.performDefaultHandling, nil, nil) }
      let anchors = roots.certificates.compactMap {
        SecCertificateCreateWithData(nil, $0 as CFData)
      }
      let policy = SecPolicyCreateSSL(true, space.host as CFString)
      guard SecTrustSetPolicies(trust, policy) == errSecSuccess,
        SecTrustSetAnchorCertificates(trust, anchors as CFArray) == errSecSuccess,
        // The system's anchors stay trusted too.
        SecTrustSetAnchorCertificatesOnly(trust, false) == errSecSuccess
      else { return (.cancelAuthenticationChallenge, nil, TLSRejection(.untrusted)) }
      var error: CFError?
      guard SecTrustEvaluateWithError(trust, &error) else {
        return (.cancelAuthenticationChallenge, nil, rejection(error))
      }
      return (.useCredential, URLCredential(trust: trust), nil)
    }

    /// What the Security framework's error says was wrong with the certificate.
    private static func rejection(_ error: CFError?) -> TLSRejection {
      guard let error else { return TLSRejection(.untrusted) }
      switch OSStatus(CFErrorGetCode(error)) {
      case errSecCertificateExpired, errSecCertificateNotValidYet: return TLSRejection(.expired)
      case errSecHostNameMismatch: return TLSRejection(.hostName)
      case errSecInvalidExtendedKeyUsage: return TLSRejection(.purpose)
      case errSecNotTrusted, errSecCreateChainFailed: return TLSRejection(.unknownAuthority)
      default: return TLSRejection(.untrusted)
      }
    }
  }
#endif
