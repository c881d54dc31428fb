// `serve --tls=on`: CepisMock's routes over HTTPS, for the HTTPS rows and curl beside them.

import CepisMock
import Foundation

/// Serves `server`'s routes over HTTPS through a TLS relay (trait builds) and prints its URL,
/// then the path of the certificate authority's certificate (`--cacert` for curl and for the
/// client commands), and serves until the process is stopped. Without the trait, fails.
func serveOverTLS(_ server: MockServer) async {
  #if AsyncHTTPClient
    do {
      let authority = try MockCertificateAuthority()
      let certificate = try authority.writeCertificate()
      let relay = try await MockTLSRelay.start(
        forwardingTo: server.port, serving: try authority.issue(.valid))
      print(relay.baseURL.absoluteString)
      print(certificate.path)
      fflush(nil)
      // The relay serves until SIGTERM ends the process.
      while true { try? await Task.sleep(nanoseconds: 3_600_000_000_000) }
    } catch {
      fail("cannot start the TLS relay: \(error)")
    }
  #else
    fail("serve --tls needs a build with --traits AsyncHTTPClient")
  #endif
}
