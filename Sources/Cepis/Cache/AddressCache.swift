import CepisSupport
import Foundation

/// A cache of cep.is answers tied to the Correios DNE edition they belong to: a repeated
/// lookup costs no request until the data changes.
///
/// ```swift
/// let client = Client(cache: .memory(capacity: 100_000))
/// let shared = Client(cache: .sqlite(at: cacheFolder.appendingPathComponent("cepis.sqlite")))
/// ```
///
/// For each CEP the cache keeps cep.is's answer — the address, or "does not exist" — with the
/// DNE edition it belongs to, when it was stored, and whether it came from the single endpoint
/// (with ``Address/geo``) or the batch endpoint (without). Answers of the public fallbacks
/// (``Fallback``; ``Address/source`` other than ``AddressSource/cepis``) are not DNE data and
/// are never kept.
///
/// ### Fresh and stale
///
/// The cache learns the edition cep.is serves from ``Client/health()`` (``Health/dne``), at
/// most once per `revalidateEvery` seconds (a file cache shares that check with every process
/// using the file). An entry is **fresh** when its edition is the live one: it answers with no
/// request. An entry of any other edition is **stale**: it is never served while cep.is or a
/// fallback can answer, but when they all fail (``CepisError/networkError(message:)``,
/// ``CepisError/serverError(message:status:)``, ``CepisError/rateLimited(message:retryAfter:)``)
/// a stale address is returned rather than the error, marked by ``Address/staleEdition``.
/// When `/health` fails, the last edition seen is used; while none was ever seen, nothing is
/// fresh and nothing is stored.
///
/// The bulk lookups (``Client/lookups(_:cep:options:)->LookupStream<Rows>``,
/// ``Client/lookupMany(_:)``) use the cache too: each run checks the edition once, answers the CEPs
/// it holds fresh with no request and stores the batch endpoint's answers; a failed request's CEPs
/// are answered by kept addresses, marked stale, as above.
///
/// A file cache also keeps the entries of the last ``frontCapacity`` single lookups in this
/// process's memory, so that a repeated ``Client/lookup(_:)`` does not wait for the file.
///
/// A file cache reads and writes on a thread of its own, at a lower scheduling priority than
/// the program's (nice 10 on Linux; the utility quality of service on Apple platforms): a
/// bulk run's answers are written with the CPU the run leaves idle, up to 128,000 of them
/// behind the run, and a read waits behind the program's own work only when every core is
/// busy.
///
/// A cache never makes a lookup fail: every error of the cache (an unreadable file, a full
/// disk) degrades to asking the network, and is reported once through ``warnings``.
public final class AddressCache: Sendable {
  /// Where the entries are kept.
  public enum Storage: Sendable, Hashable {
    /// In this process's memory, at most this many CEPs.
    case memory(capacity: Int)
    /// In a SQLite file, shared by the processes that open it, at most `maxBytes` large.
    case sqlite(url: URL, maxBytes: Int)
    #if Valkey
      /// In a Valkey or Redis server shared by a fleet, under keys that start with
      /// `keyPrefix` (``AddressCache/valkey(_:keyPrefix:entryTimeToLive:operationTimeout:revalidateEvery:onWarning:)``).
      case valkey(keyPrefix: String)
    #endif
  }

  /// Where the entries are kept, as asked for (see ``warnings`` for a file cache that had to
  /// fall back to memory).
  public let storage: Storage
  /// How long, in seconds, an edition learnt from `/health` is trusted before it is asked
  /// again.
  public let revalidateEvery: TimeInterval

  let now: @Sendable () -> Date
  private let backend: LockedValue<Backend>
  /// Which edition cep.is serves, as far as this cache knows.
  private let edition: EditionTracker
  /// For a file cache, the entries single lookups read or stored last (see ``frontCapacity``);
  /// `nil` for a memory cache, which is its own front.
  private let front: MemoryFront?
  /// A file cache's queue, and the answers waiting on it to be written.
  private let writeBehind: WriteBehind
  private let issued: CacheWarnings

  /// The nice value of a file cache's thread on Linux (10; on Apple platforms the utility
  /// quality of service).
  ///
  /// A bulk run's answers are written to the file while the run goes on. On a machine whose
  /// cores the run already keeps busy (its own rows, the network, a local server), a writer at
  /// the same priority takes its CPU from the run's critical path; at a lower priority it takes
  /// what the run leaves idle, and the write-behind backlog (``WriteBehind/entriesBehind``) lets it fall
  /// behind until then: on two cores, neither a larger backlog alone nor a lower priority alone
  /// took a first `cepis enrich` into a fresh file near its run without a cache; both together
  /// did (the A/B of `6427437`; Benchmarks/RESULTS.md, row `cached enrich, first run`). Reads
  /// run on the same thread, so a file read waits behind the program's own work only when
  /// every core is busy; a repeated single lookup is served from memory (``frontCapacity``).
  static let fileThreadNice: Int32 = 10

  /// The nice value of a server cache's thread (0, the program's own). Its writes cost the
  /// program little (a chunk's answers go out in one round trip), and every chunk's read
  /// waits on it, so it must not wait behind the run's own work (Benchmarks/RESULTS.md, row
  /// `enrich through Valkey, second run`).
  static let serverThreadNice: Int32 = 0

  private enum Backend: Sendable {
    case ready(any CacheStore)
    case unopenedFile(URL, maxBytes: Int)
  }

  /// A cache in this process's memory.
  ///
  /// - Parameters:
  ///   - capacity: the most CEPs kept; the least recently used is forgotten first.
  ///   - revalidateEvery: seconds an edition learnt from `/health` is trusted.
  public static func memory(capacity: Int = 100_000, revalidateEvery: TimeInterval = 3_600)
    -> AddressCache
  {
    AddressCache(
      storage: .memory(capacity: max(0, capacity)), revalidateEvery: revalidateEvery,
      onWarning: nil, now: { Date() })
  }

  /// A cache in a SQLite file, shared by every process that opens it.
  ///
  /// The folder is created (mode `0700`) when missing, the file with mode `0600`; nothing is
  /// opened until the first lookup. A file that is damaged, not a Cepis cache, or written by a
  /// newer Cepis is renamed `<name>.corrupt-<timestamp>` and a fresh one starts, with one
  /// warning. Where SQLite cannot be loaded at run time, the cache works in memory and says so
  /// once.
  ///
  /// ```swift
  /// let cache = AddressCache.sqlite(at: url) { warning in print("cepis: \(warning)") }
  /// ```
  ///
  /// - Parameters:
  ///   - url: the database file.
  ///   - maxBytes: the bound on the file's size; past it, entries of other editions are
  ///     evicted first, then the least recently used.
  ///   - revalidateEvery: seconds an edition learnt from `/health` is trusted, by every
  ///     process using the file.
  ///   - onWarning: called once for each distinct warning (also kept in ``warnings``); never
  ///     with personal data or a key.
  public static func sqlite(
    at url: URL, maxBytes: Int = 256 << 20, revalidateEvery: TimeInterval = 3_600,
    onWarning: (@Sendable (String) -> Void)? = nil
  ) -> AddressCache {
    AddressCache(
      storage: .sqlite(url: url, maxBytes: maxBytes), revalidateEvery: revalidateEvery,
      onWarning: onWarning, now: { Date() })
  }

  /// A cache with an injected clock, and how long a file cache's stores may wait to be
  /// written in a group (see ``storeBehind(_:kind:edition:)``) (tests).
  package convenience init(
    storage: Storage, revalidateEvery: TimeInterval,
    onWarning: (@Sendable (String) -> Void)?, now: @escaping @Sendable () -> Date,
    flushDelay: DispatchTimeInterval = .seconds(1)
  ) {
    self.init(
      storage: storage, revalidateEvery: revalidateEvery, onWarning: onWarning, now: now,
      flushDelay: flushDelay, makeStore: nil)
  }

  /// A cache on the store `makeStore` makes, handed the cache's warnings (a shared cache's).
  init(
    storage: Storage, revalidateEvery: TimeInterval,
    onWarning: (@Sendable (String) -> Void)?, now: @escaping @Sendable () -> Date,
    flushDelay: DispatchTimeInterval = .seconds(1),
    makeStore: ((_ warn: @escaping @Sendable (String) -> Void) -> any CacheStore)?
  ) {
    self.storage = storage
    self.revalidateEvery = revalidateEvery.isNaN ? 0 : max(0, revalidateEvery)
    self.now = now
    issued = CacheWarnings(onWarning: onWarning)
    edition = EditionTracker(revalidateEvery: self.revalidateEvery, now: now)
    let niceValue: Int32
    switch storage {
    case .memory, .sqlite: niceValue = Self.fileThreadNice
    #if Valkey
      case .valkey: niceValue = Self.serverThreadNice
    #endif
    }
    writeBehind = WriteBehind(flushDelay: flushDelay, warnings: issued, niceValue: niceValue)
    switch storage {
    case .memory(let capacity):
      backend = LockedValue(.ready(MemoryCacheStore(capacity: capacity)))
      front = nil
    case .sqlite(let url, let maxBytes):
      backend = LockedValue(.unopenedFile(url, maxBytes: maxBytes))
      front = MemoryFront(capacity: Self.frontCapacity)
    #if Valkey
      case .valkey:
        // Only ``valkey(_:keyPrefix:entryTimeToLive:operationTimeout:revalidateEvery:onWarning:)``
        // makes this storage, with its store; without one, nothing is kept.
        let store = makeStore?({ [issued] in issued.issue($0) }) ?? MemoryCacheStore(capacity: 0)
        backend = LockedValue(.ready(store))
        front = MemoryFront(capacity: Self.frontCapacity)
    #endif
    }
  }

  /// How many single-lookup entries a file cache also keeps in memory (10,000), least
  /// recently used forgotten first. An entry there is one of the file's, of its edition: the
  /// same DNE data whichever copy answers, so it needs no check against the file; it is
  /// served only while its edition is the live one, like the file's. (Clearing the cache in
  /// this process empties it too; another process clearing the file does not reach it.)
  public static let frontCapacity = 10_000

  /// The warnings issued so far, each once, oldest first (at most 32): the file moved aside,
  /// SQLite missing, an error that made the cache step aside for a call.
  public var warnings: [String] { issued.list }

  // MARK: The store, off the cooperative pool

  /// The store, opening the file (or falling back to memory) on first use.
  func resolvedStore() -> any CacheStore {
    let (store, warning) = backend.withLock { backend -> (any CacheStore, String?) in
      switch backend {
      case .ready(let store):
        return (store, nil)
      case .unopenedFile(let url, let maxBytes):
        let store: any CacheStore
        var warning: String?
        if let library = SQLiteLibrary.shared {
          store = SQLiteCacheStore(
            url: url, maxBytes: maxBytes, library: library,
            warn: { [issued] in issued.issue($0) })
        } else {
          warning =
            "\(SQLiteLibrary.loadFailure ?? "SQLite cannot be loaded"): the cache at "
            + "\(url.path) works in memory only"
          store = MemoryCacheStore(capacity: 100_000)
        }
        backend = .ready(store)
        return (store, warning)
      }
    }
    // Outside the lock: a caller's `onWarning` may call back into the cache.
    if let warning { issued.issue(warning) }
    return store
  }

  /// Runs `body` on the store: on the cache's queue for a file, in place in memory. An error
  /// becomes a warning and `nil`.
  func perform<T: Sendable>(
    _ what: String, _ body: @escaping @Sendable (any CacheStore) throws -> T
  ) async -> T? {
    let store = resolvedStore()
    let run: @Sendable () -> T? = { [issued] in
      do {
        return try body(store)
      } catch {
        issued.stepAside(what, error)
        return nil
      }
    }
    guard store.waitsForIO else { return run() }
    // Answers stored before this call are written before it runs: the order asked in.
    return await writeBehind.afterBacklog(on: store, run)
  }

  // MARK: Package API (the client and the bulk engine)

  /// The DNE edition cep.is serves, asking `client.health()` when the last check is older
  /// than ``revalidateEvery`` (or another process's check, read from the file, is). `nil`
  /// while no edition was ever seen.
  package func liveEdition(using client: Client) async -> String? {
    await edition.liveEdition(using: client, shared: sharedMark)
  }

  /// Asks `client.health()` for the live edition now, whatever the interval (the bulk
  /// engine calls it once at the start of each run), and records it; concurrent callers share
  /// one request, and processes sharing a server's store share one check that started within
  /// ``EditionTracker/fleetCheckSeconds``. When `/health` fails, the last edition seen (`nil`
  /// if none) is returned.
  ///
  /// With `since`, a check that ended after that moment (or is still recent at it) is used
  /// instead: a caller that found no recent check, and then waited (to read the file, or to
  /// be scheduled) while another caller's check ended, does not ask again.
  @discardableResult
  func refreshEdition(using client: Client, unlessLearntSince since: Date? = nil)
    async -> String?
  {
    await edition.refresh(using: client, shared: sharedMark, unlessLearntSince: since)
  }

  /// The entries of `edition` held for `ceps`, of either kind (a single-kind entry carries
  /// `geo`); each is marked as used. Empty when the cache cannot be read.
  package func freshEntries(for ceps: [Int], edition: String) async -> [Int: CacheEntry] {
    let now = self.now()
    let store = resolvedStore()
    guard store.readsAwaiting else {
      return await perform("be read") { try $0.entries(for: ceps, of: edition, now: now) } ?? [:]
    }
    do {
      return try await store.entriesAwaiting(for: ceps, of: edition, now: now)
    } catch {
      issued.stepAside("be read", error)
      return [:]
    }
  }

  /// The entry of `edition` held for one CEP, for ``Client/lookup(_:)``: from the memory
  /// front of a file cache when it holds it (its recency noted for the file, which is not
  /// waited for), else as ``freshEntries(for:edition:)`` reads it, and then kept in front.
  package func freshEntry(for cep: Int, edition: String) async -> CacheEntry? {
    guard let front else { return await freshEntries(for: [cep], edition: edition)[cep] }
    return await front.freshEntry(
      for: cep, edition: edition,
      noteUsed: { resolvedStore().noteUsed(CollectionOfOne($0), now: now()) },
      read: { await freshEntries(for: [cep], edition: edition)[cep] })
  }

  /// The answers of `edition` held for `ceps` as the batch endpoint gives them (`geo`
  /// removed): `.some(nil)` for "does not exist". For the bulk engine's chunks.
  func batchAnswers(for ceps: [Int], edition: String) async -> [Int: Address?] {
    var answers: [Int: Address?] = [:]
    for (cep, entry) in await freshEntries(for: ceps, edition: edition) {
      var address = entry.address
      address?.geo = nil
      answers[cep] = .some(address)
    }
    return answers
  }

  /// Every answer of `edition` a file cache holds, as a bulk chunk would be answered with
  /// them (``batchAnswers(for:edition:)``: no `geo`), handed to `deliver` `batchSize` at a
  /// time as the one pass over the file reads them (on the cache's thread), each with whether
  /// a use of it is due to be noted (``noteUsed(_:)``). `deliver` is first told how many there
  /// are; it returns `false` to stop the pass. Returns whether every answer was delivered:
  /// `false` when there are more than `limit` (nothing is delivered), for a memory cache, when
  /// `deliver` stopped, or when the file cannot be read (answers delivered before the error
  /// stand: they are the file's).
  package func allBatchAnswers(
    edition: String, limit: Int, batchSize: Int,
    deliver: @escaping @Sendable (_ answers: [PreloadedAnswer], _ total: Int) -> Bool
  ) async -> Bool {
    let now = self.now()
    return await perform("be read") { store -> Bool in
      try store.allBatchAnswers(
        edition: edition, limit: limit, now: now, batchSize: batchSize, deliver: deliver)
    } ?? false
  }

  /// Notes that `ceps` were used now (their recency, written with the file's next transaction): for
  /// answers read by ``allBatchAnswers(edition:limit:batchSize:deliver:)``, once a row uses them.
  package func noteUsed(_ ceps: [Int]) {
    resolvedStore().noteUsed(ceps, now: now())
  }

  /// The entry held for `cep`, whatever its edition (for the stale answer).
  func anyEntry(for cep: Int) async -> CacheEntry? {
    let now = self.now()
    return await perform("be read") { try $0.entries(for: [cep], now: now) }?[cep]
  }

  /// The entries held for `ceps`, whatever their edition (the stale answers of a bulk chunk
  /// that failed). Empty when the cache cannot be read.
  package func anyEntries(for ceps: [Int]) async -> [Int: CacheEntry] {
    let now = self.now()
    return await perform("be read") { try $0.entries(for: ceps, now: now) } ?? [:]
  }

  /// Stores cep.is's answers of `edition` in one transaction (one chunk): an address, or
  /// `nil` for "does not exist". Answers whose ``Address/source`` is not cep.is are skipped.
  func store(
    _ answers: [(cep: Int, address: Address?)], kind: CacheEntryKind, edition: String
  ) async {
    let now = self.now()
    let entries = CacheEntry.toStore(answers, kind: kind, edition: edition, now: now)
    guard !entries.isEmpty else { return }
    // The bulk engine's chunks (batch entries) do not pass through the front: a front entry of
    // the same edition stays right, and one of another edition is not served as fresh.
    if kind == .single { front?.keep(entries) }
    _ = await perform("store answers") {
      try $0.store(entries, liveEdition: edition, now: now)
    }
  }

  /// Stores answers as ``store(_:kind:edition:)`` does, without waiting for the file while
  /// fewer than ``WriteBehind/entriesBehind`` answers wait to be written (the bulk engine's rows go on
  /// meanwhile); past that, waits for its own, so that what waits stays bounded.
  ///
  /// Chunks are gathered and written in one transaction once ``WriteBehind/groupEntries`` answers wait
  /// (a group commit: a chunk is never split between two); at the latest `flushDelay` (one
  /// second) after the first of them; and at once before any other use of the file and at
  /// ``drainStores()``: reads, writes and drains keep the order they were asked in.
  package func storeBehind(
    _ answers: [(cep: Int, address: Address?)], kind: CacheEntryKind, edition: String
  ) async {
    let store = resolvedStore()
    guard store.waitsForIO, store.groupsWrites else {
      await self.store(answers, kind: kind, edition: edition)
      return
    }
    let now = self.now()
    let entries = CacheEntry.toStore(answers, kind: kind, edition: edition, now: now)
    guard !entries.isEmpty else { return }
    await writeBehind.add(entries, edition: edition, now: now, to: store)
  }

  /// Returns once every store queued before the call is written (or failed, with a warning).
  package func drainStores() async {
    let store = resolvedStore()
    guard store.waitsForIO else { return }
    await writeBehind.afterBacklog(on: store) {}
  }

  /// Whether the cache holds any entry of `edition` (`true` when it cannot tell: the run's
  /// reads then find what they find).
  func holdsEntries(of edition: String) async -> Bool {
    await perform("be read") { try $0.hasEntries(of: edition) } ?? true
  }

  /// Counts what the cache holds (`nil` when it cannot be read).
  package func statistics() async -> CacheStatistics? {
    await perform("be read") { try $0.statistics() }
  }

  /// Forgets every entry and the edition seen; `false` when the file could not be cleared.
  @discardableResult
  package func clear() async -> Bool {
    edition.forget()
    front?.forgetAll()
    return await perform("be cleared") { try $0.clear() } != nil
  }

  /// Closes the file (it opens again when needed), writing pending recency first.
  package func close() async {
    let store = resolvedStore()
    guard store.waitsForIO else { return store.close() }
    await writeBehind.afterBacklog(on: store) { store.close() }
  }
}
