#if Valkey
  import Foundation
  import Valkey

  extension AddressCache {
    /// A cache in a Valkey or Redis server, shared by every process of a fleet that uses the
    /// same server and prefix: each CEP is asked once per DNE edition, whichever pod asks.
    ///
    /// The caller owns `client` and runs it (`client.run()`, or in a `ServiceGroup`), as with
    /// an `HTTPClient`. The cache follows the rules of every other store — an entry per CEP
    /// and DNE edition, cep.is's answers only, "does not exist" kept per edition, a stale
    /// entry served only when every source fails — and the fleet's rules:
    ///
    /// - the live edition is kept in the server, so the fleet asks `/health` once per
    ///   `revalidateEvery`, not once per process;
    /// - every key expires `entryTimeToLive` after it was written (two DNE cycles by default),
    ///   so old editions leave by themselves;
    /// - a bulk chunk's reads and writes are one round trip each way;
    /// - values carry a format tag: a value another program (or a newer Cepis) wrote under the
    ///   prefix is read as a miss, with one warning.
    ///
    /// ```swift
    /// let valkey = ValkeyClient(.hostname("cache.internal", port: 6379), logger: logger)
    /// let client = Client(cache: .valkey(valkey))
    /// let services: [any Service] = [valkey, app]  // the client runs with the app
    /// ```
    ///
    /// A server that is down, killed, paused or answering what Cepis never wrote costs no row:
    /// each operation waits at most `operationTimeout`, the first failure starts an outage with
    /// one warning, lookups go to the network meanwhile, and the server is tried again every
    /// second until it answers.
    ///
    /// - Parameters:
    ///   - client: the Valkey client, run by the caller.
    ///   - keyPrefix: the start of every key the cache writes (`cepis:`); `cepis cache clear`
    ///     removes these and nothing else.
    ///   - entryTimeToLive: seconds each key lives after it was written.
    ///   - operationTimeout: the longest a lookup waits for the server before asking the
    ///     network.
    ///   - revalidateEvery: seconds an edition learnt from `/health` is trusted by the fleet.
    ///   - onWarning: called once for each distinct warning (also kept in ``warnings``); never
    ///     with personal data, a key or a password.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    public static func valkey(
      _ client: ValkeyClient, keyPrefix: String = "cepis:",
      entryTimeToLive: TimeInterval = AddressCache.twoDNECycles,
      operationTimeout: TimeInterval = 1, revalidateEvery: TimeInterval = 3_600,
      onWarning: (@Sendable (String) -> Void)? = nil
    ) -> AddressCache {
      AddressCache(
        storage: .valkey(keyPrefix: keyPrefix), revalidateEvery: revalidateEvery,
        onWarning: onWarning, now: { Date() },
        makeStore: { warn in
          ValkeyCacheStore(
            client: client, keyPrefix: keyPrefix, entryTimeToLive: entryTimeToLive,
            operationTimeout: operationTimeout, warn: warn)
        })
    }

    /// Two cycles of the Correios DNE, which is published monthly: 62 days, in seconds.
    public static let twoDNECycles: TimeInterval = 62 * 86_400
  }
#endif
