#if AsyncHTTPClient
  import AsyncHTTPClient
  import NIOSSL

  extension AsyncHTTPClientTransport {
    /// A transport on a client of its own whose TLS trusts `trustRoots` besides the system's
    /// roots (swift-nio-ssl's additional trust roots), with full verification (chain and host
    /// name) kept, and whose requests follow `proxy`.
    ///
    /// - Throws: ``TrustRootsError`` when swift-nio-ssl cannot read a certificate.
    package init(proxy: ProxySettings, trustRoots: TrustRoots) throws(TrustRootsError) {
      var certificates: [NIOSSLCertificate] = []
      for (index, der) in trustRoots.certificates.enumerated() {
        do {
          certificates.append(try NIOSSLCertificate(bytes: Array(der), format: .der))
        } catch {
          throw TrustRootsError(reason: "certificate \(index + 1) is not an X.509 certificate")
        }
      }
      var tls = TLSConfiguration.makeClientConfiguration()
      tls.additionalTrustRoots = [.certificates(certificates)]
      var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(30)))
      configuration.tlsConfiguration = tls
      self.init(configuration: configuration, proxy: proxy)
    }
  }
#endif

#if AsyncHTTPClient
  extension TLSRejection {
    /// The rejection a swift-nio-ssl error describes, `nil` for any other error.
    init?(nioSSL error: any Error) {
      if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
        self.init(.hostName)
      } else if let error = error as? NIOSSLError, case .handshakeFailed(let stack) = error {
        self.init(boringSSLDescription: String(describing: stack))
      } else if let error = error as? BoringSSLError {
        self.init(boringSSLDescription: String(describing: error))
      } else {
        return nil
      }
    }
  }
#endif
