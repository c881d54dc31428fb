import Cepis
import Foundation

#if Valkey
  import Logging
  import NIOSSL
  import Valkey
#endif

/// `--cache redis://…`: the address cache in a Valkey or Redis server, through a
/// `ValkeyClient` this process runs until it exits.
enum CacheServer {
  /// The cache in the server `url` names, under `keyPrefix`. A usage error on a build without
  /// the `Valkey` trait, on a platform valkey-swift does not support, or for a URL it cannot
  /// use; the password never appears in a message.
  static func cache(
    _ url: URL, keyPrefix: String, context: Context,
    onWarning: @escaping @Sendable (String) -> Void
  ) throws(UsageError) -> AddressCache {
    #if Valkey
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else {
        throw UsageError(
          message: "--cache \(url.scheme ?? "redis")://… needs macOS 15 or later",
          path: context.path)
      }
      let client = try client(url, context: context)
      Task { await client.run() }
      // Two seconds: a short-lived process's first operation includes connecting (and TLS).
      return .valkey(client, keyPrefix: keyPrefix, operationTimeout: 2, onWarning: onWarning)
    #else
      throw UsageError(
        message: "--cache \(url.scheme ?? "redis")://… needs a cepis built with the Valkey "
          + "package trait (swift build --traits Valkey); this one keeps its cache in a file",
        path: context.path)
    #endif
  }

  #if Valkey
    /// A client for `url`: host, port (6379), user and password, database (the path), and TLS
    /// for `rediss://` (the system's roots, and `--cacert`'s).
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    static func client(_ url: URL, context: Context) throws(UsageError) -> ValkeyClient {
      let scheme = url.scheme?.lowercased() ?? "redis"
      var configuration = ValkeyClientConfiguration()
      if let password = url.password {
        // `redis://:secret@host`, without a user, is the `default` user's password.
        let user = url.user.flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        configuration.authentication = .init(
          username: user.removingPercentEncoding ?? user,
          password: password.removingPercentEncoding ?? password)
      }
      let path = url.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
      if !path.isEmpty {
        guard let database = Int(path), database >= 0 else {
          throw UsageError(
            message: "--cache: the database is a number (\(scheme)://host:port/0)",
            path: context.path)
        }
        configuration.databaseNumber = database
      }
      let host = url.host ?? "127.0.0.1"
      if scheme == "rediss" || scheme == "valkeys" {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let bundle = try context.caBundle() {
          do {
            tls.additionalTrustRoots = [
              .certificates(try NIOSSLCertificate.fromPEMBytes(Array(bundle)))
            ]
          } catch {
            throw UsageError(message: "the CA bundle holds no PEM certificate", path: context.path)
          }
        }
        do {
          configuration.tls = try .enable(tls, tlsServerName: host)
        } catch {
          throw UsageError(message: "--cache: TLS cannot be set up (\(error))", path: context.path)
        }
      }
      return ValkeyClient(
        .hostname(host, port: url.port ?? 6379), configuration: configuration,
        logger: Logger(label: "cepis.cache") { _ in SwiftLogNoOpLogHandler() })
    }
  #endif
}
