// `--cache`: the address cache a measured client goes through, for the cache rows.

import Cepis
import Foundation

#if Valkey
  import Logging
  import Valkey
#endif

/// The cache `location` names: a SQLite file, or (builds with the `Valkey` trait) a
/// `redis://host:port` server, through a `ValkeyClient` this process runs, under a prefix of
/// its own.
func benchCache(_ location: String?) -> AddressCache? {
  guard let location else { return nil }
  guard location.hasPrefix("redis://") else {
    return .sqlite(at: URL(fileURLWithPath: location))
  }
  #if Valkey
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else {
      fail("--cache \(location): needs macOS 15")
    }
    let client = benchValkeyClient(location)
    Task { await client.run() }
    return .valkey(
      client, keyPrefix: "cepis-bench-\(ProcessInfo.processInfo.processIdentifier):",
      operationTimeout: 2)
  #else
    fail("--cache \(location): this build has no Valkey trait")
  #endif
}

/// The next of `count` indices in turn, for any number of tasks.
final class Turn: @unchecked Sendable {
  // Sound: `index` is read and written under `lock` only.
  private let lock = NSLock()
  private var index = 0
  private let count: Int

  init(count: Int) { self.count = max(1, count) }

  func next() -> Int {
    lock.lock()
    defer { lock.unlock() }
    let current = index
    index = (index + 1) % count
    return current
  }
}

/// `valkey-get --cache redis://host:port`: the floor under a cached lookup through Valkey, the
/// client's own round trip with no Cepis code: one `GET` at a time, awaited in the task that
/// sends it, through a `ValkeyClient` this process runs.
func benchValkeyRoundTrip(_ location: String, seconds: Double) async {
  #if Valkey
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else {
      fail("--cache \(location): needs macOS 15")
    }
    let client = benchValkeyClient(location)
    let running = Task { await client.run() }
    await reportRequestLoop(concurrency: 1, seconds: seconds) {
      _ = try await client.get(ValkeyKey("cepis-bench-floor"))
    }
    running.cancel()
  #else
    fail("valkey-get: this build has no Valkey trait")
  #endif
}

#if Valkey
  /// A client of the `redis://host:port` server `location` names, logging nowhere; the caller
  /// runs it.
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  func benchValkeyClient(_ location: String) -> ValkeyClient {
    guard let url = URL(string: location) else { fail("--cache \(location): not a redis:// URL") }
    return ValkeyClient(
      .hostname(url.host ?? "127.0.0.1", port: url.port ?? 6379),
      logger: Logger(label: "cepis-bench.valkey") { _ in SwiftLogNoOpLogHandler() })
  }
#endif
