import Cepis
import Foundation

extension Context {
  /// The certificate authorities `--cacert FILE` (env `CEPIS_CA_BUNDLE`) names, in PEM, to
  /// trust besides the system's; `nil` when neither is given. A usage error when the file
  /// cannot be read.
  func caBundle() throws(UsageError) -> Data? {
    guard
      let path = parsed.value("cacert")
        ?? environment["CEPIS_CA_BUNDLE"].flatMap({ $0.isEmpty ? nil : $0 })
    else { return nil }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw UsageError(message: "cannot read the CA bundle '\(path)'", path: self.path)
    }
    return data
  }

  /// A transport of `kind` (through `proxy` when given) that trusts `bundle` besides the
  /// system's roots. URLSession on Linux cannot (FoundationNetworking has no per-session
  /// roots): a usage error there, rather than a bundle silently ignored.
  func transport(
    _ kind: Transport.Kind, proxy: URL?, trusting bundle: Data
  ) throws(UsageError) -> Transport {
    #if canImport(FoundationNetworking)
      if kind == .urlSession {
        throw UsageError(
          message: "--cacert and CEPIS_CA_BUNDLE need the async-http-client transport on "
            + "Linux: URLSession there trusts the system's CA bundle only",
          path: path)
      }
    #endif
    let made: Transport?
    do {
      made = try Transport.make(kind, proxy: proxy, trustRoots: bundle)
    } catch {
      throw UsageError(message: "the CA bundle: \(error.reason)", path: path)
    }
    guard let made else {
      throw UsageError(message: "the \(kind) transport cannot be made", path: path)
    }
    return made
  }
}
