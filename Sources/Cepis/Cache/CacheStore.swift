import Foundation

/// Which cep.is endpoint an answer in the cache came from.
package enum CacheEntryKind: Int, Sendable, Hashable {
  /// The single endpoint (`GET /{cep}`): the address with its coordinates.
  case single = 0
  /// The batch endpoint (`/csv`): the address without coordinates.
  case batch = 1
}

/// One CEP's cep.is answer as the cache keeps it.
package struct CacheEntry: Sendable, Hashable {
  /// The CEP as a number (`1001000` for `01001-000`).
  package var cep: Int
  /// The address, or `nil` for "does not exist".
  package var address: Address?
  /// The DNE edition the answer belongs to.
  var edition: String
  /// When it was stored.
  var storedAt: Date
  /// The endpoint it came from.
  var kind: CacheEntryKind

  /// Creates an entry.
  package init(cep: Int, address: Address?, edition: String, storedAt: Date, kind: CacheEntryKind) {
    self.cep = cep
    self.address = address
    self.edition = edition
    self.storedAt = storedAt
    self.kind = kind
  }

  /// Whether `self`, about to be stored, should replace `existing`: always, except that a
  /// batch answer never replaces a single answer of the same edition (it would lose `geo`).
  /// One row per CEP that upgrades from batch to single keeps the file half the size of two
  /// kinds side by side, and a single answer serves every caller a batch answer would.
  func replaces(_ existing: CacheEntry) -> Bool {
    !(kind == .batch && existing.kind == .single && existing.edition == edition)
  }
}

extension CacheEntry {
  /// The entries to store for `answers`: cep.is's only (a fallback's answer is not DNE data),
  /// without a stale mark, and without `geo` for the batch kind.
  static func toStore(
    _ answers: [(cep: Int, address: Address?)], kind: CacheEntryKind, edition: String,
    now: Date
  ) -> [CacheEntry] {
    answers.compactMap { answer -> CacheEntry? in
      if let address = answer.address, address.source != .cepis { return nil }
      var address = answer.address
      address?.staleEdition = nil
      if kind == .batch { address?.geo = nil }
      return CacheEntry(
        cep: answer.cep, address: address, edition: edition, storedAt: now, kind: kind)
    }
  }
}

/// One answer of a file cache's pass over an edition (a bulk run's preload): as the batch
/// path serves it (no `geo`).
package struct PreloadedAnswer: Sendable {
  /// The CEP as a number.
  package var cep: Int
  /// The address, or `nil` for "does not exist".
  package var address: Address?
  /// Whether the entry's recency is out of date: a row's use of it is to be noted.
  var stale: Bool

  /// Creates an answer.
  package init(cep: Int, address: Address?, stale: Bool) {
    self.cep = cep
    self.address = address
    self.stale = stale
  }
}

/// The last edition `/health` named, and when it was asked (shared through the file).
package struct EditionMark: Sendable, Hashable {
  /// The DNE edition, as `Health.dne` names it.
  package var edition: String
  /// When `/health` said so.
  package var checkedAt: Date

  /// Creates a mark.
  package init(edition: String, checkedAt: Date) {
    self.edition = edition
    self.checkedAt = checkedAt
  }
}

/// How many entries a cache holds, and of which editions (for `cepis cache info`).
package struct CacheStatistics: Sendable, Hashable {
  /// Entries per DNE edition.
  package var entriesPerEdition: [String: Int]
  /// The file's size in bytes (`page_count × page_size`), 0 in memory.
  package var bytes: Int
  /// The last edition seen, and when.
  package var edition: EditionMark?
}

/// Where a cache keeps its entries: in memory, or in a SQLite file. Every method may throw
/// (the file); ``AddressCache`` turns every error into a miss and a warning.
///
/// Every operation the cache needs is a requirement here, so that the cache never asks which
/// store it has; each store passes the store conformance suite (`CacheStoreConformanceTests`).
protocol CacheStore: Sendable {
  /// Whether an operation may wait for I/O (a file). The cache then runs operations on a
  /// queue of its own, off the caller's thread, and writes answers behind: grouped, in the
  /// order asked. Otherwise it runs each in place, at once.
  var waitsForIO: Bool { get }
  /// The entries held for `ceps` (those held only), each marked as used at `now`.
  func entries(for ceps: [Int], now: Date) throws -> [Int: CacheEntry]
  /// The entries of `edition` held for `ceps`, each marked as used at `now`: what a bulk
  /// chunk and a lookup read (a server's store reads the one edition, in one round trip).
  func entries(for ceps: [Int], of edition: String, now: Date) throws -> [Int: CacheEntry]
  /// Whether ``entriesAwaiting(for:of:now:)`` reads without blocking a thread (a server's
  /// store): the cache then awaits it in the caller's task, without a trip to its own thread.
  var readsAwaiting: Bool { get }
  /// ``entries(for:of:now:)``, awaited rather than waited for, for a store that
  /// ``readsAwaiting``.
  func entriesAwaiting(for ceps: [Int], of edition: String, now: Date) async throws
    -> [Int: CacheEntry]
  /// Stores `entries` in one transaction (see ``CacheEntry/replaces(_:)``), then keeps the
  /// store within its bound, evicting entries of editions other than `liveEdition` first.
  func store(_ entries: [CacheEntry], liveEdition: String, now: Date) throws
  /// The edition mark kept, if any.
  func editionMark() throws -> EditionMark?
  /// Keeps `mark`.
  func setEditionMark(_ mark: EditionMark) throws
  /// Whether the store holds any entry of `edition`.
  func hasEntries(of edition: String) throws -> Bool
  /// Counts what the store holds.
  func statistics() throws -> CacheStatistics
  /// Forgets every entry and the edition mark.
  func clear() throws
  /// Notes that `ceps` were used at `now` (answered from a memory front, or preloaded), so
  /// that they are kept before entries not used since; never waits for I/O.
  func noteUsed(_ ceps: some Collection<Int>, now: Date)
  /// Hands every answer of `edition` held to `deliver`, `batchSize` at a time, as a bulk
  /// chunk would be answered with them (no `geo`); `deliver` is first told how many there
  /// are and returns `false` to stop. Returns whether every answer was delivered: `false`,
  /// with nothing delivered, when there are more than `limit` or when the store cannot read
  /// everything faster than one look-up per CEP (then the bulk run asks CEP by CEP).
  func allBatchAnswers(
    edition: String, limit: Int, now: Date, batchSize: Int,
    deliver: (_ answers: [PreloadedAnswer], _ total: Int) -> Bool
  ) throws -> Bool
  /// Releases what the store holds open (it opens again when used), after writing what it
  /// keeps pending.
  func close()

  /// Whether answers stored by a bulk run are gathered and written in groups (a file: one
  /// transaction for many chunks), or each chunk's at once (a server that other processes
  /// wait on for them).
  var groupsWrites: Bool { get }
  /// Whether the store holds claims (``claim(_:edition:seconds:)``): a store that other
  /// processes ask through at once.
  var holdsClaims: Bool { get }
  /// Claims `ceps` of `edition` for this process for `seconds`, so that the other processes
  /// sharing the store wait for its answers rather than ask for them too; returns those
  /// claimed (all of them for a store that holds no claims).
  func claim(_ ceps: [Int], edition: String, seconds: Int) throws -> Set<Int>
  /// Of `ceps`, those another process holds a claim on.
  func claimsHeld(_ ceps: [Int], edition: String) throws -> Set<Int>
  /// Gives up this process's claims on `ceps` (its request failed: others ask for them).
  func releaseClaims(_ ceps: [Int], edition: String) throws
  /// Claims the next `/health` check for this process for `seconds`, so that processes that
  /// check at the same moment ask once between them; returns whether this process is to ask
  /// (always, for a store that holds no claims).
  func claimEditionCheck(seconds: Int) throws -> Bool
  /// Gives up this process's claim on the `/health` check (the check ended).
  func releaseEditionCheck() throws
}

extension CacheStore {
  /// ``entries(for:now:)``, those of `edition` only: a store that keeps one entry per CEP.
  func entries(for ceps: [Int], of edition: String, now: Date) throws -> [Int: CacheEntry] {
    try entries(for: ceps, now: now).filter { $0.value.edition == edition }
  }

  /// No: a file's reads wait on the cache's thread, and memory's never wait.
  var readsAwaiting: Bool { false }

  /// ``entries(for:of:now:)`` itself.
  func entriesAwaiting(for ceps: [Int], of edition: String, now: Date) async throws
    -> [Int: CacheEntry]
  {
    try entries(for: ceps, of: edition, now: now)
  }

  /// Grouped: the file stores' way.
  var groupsWrites: Bool { waitsForIO }

  /// None held: each process asks for what it misses.
  var holdsClaims: Bool { false }

  /// Every CEP: a store that holds no claims (memory, a file) lets each process ask.
  func claim(_ ceps: [Int], edition: String, seconds: Int) throws -> Set<Int> { Set(ceps) }

  /// None.
  func claimsHeld(_ ceps: [Int], edition: String) throws -> Set<Int> { [] }

  /// Nothing to give up.
  func releaseClaims(_ ceps: [Int], edition: String) throws {}

  /// Always: each process checks the edition for itself.
  func claimEditionCheck(seconds: Int) throws -> Bool { true }

  /// Nothing to give up.
  func releaseEditionCheck() throws {}
}

/// The in-memory store: at most `capacity` CEPs, the least recently used forgotten first.
final class MemoryCacheStore: CacheStore {
  private let state: LockedState

  /// `@unchecked Sendable` is sound: `map` and `mark` are read and written only inside
  /// `lock`, held for the whole of each access.
  private final class LockedState: @unchecked Sendable {
    let lock = NSLock()
    var map: RecencyMap<CacheEntry>
    var mark: EditionMark?
    init(capacity: Int) { map = RecencyMap(capacity: capacity) }
  }

  /// A store of at most `capacity` CEPs (0 keeps nothing).
  package init(capacity: Int) {
    state = LockedState(capacity: capacity)
  }

  /// Memory never waits.
  package var waitsForIO: Bool { false }

  private func locked<T>(_ body: (LockedState) throws -> T) rethrows -> T {
    state.lock.lock()
    defer { state.lock.unlock() }
    return try body(state)
  }

  package func entries(for ceps: [Int], now: Date) -> [Int: CacheEntry] {
    locked { state in
      var found: [Int: CacheEntry] = [:]
      for cep in ceps {
        if let entry = state.map.value(for: cep) { found[cep] = entry }
      }
      return found
    }
  }

  package func store(_ entries: [CacheEntry], liveEdition: String, now: Date) {
    locked { state in
      for entry in entries {
        if let existing = state.map.peek(entry.cep), !entry.replaces(existing) { continue }
        state.map.set(entry, for: entry.cep)
      }
    }
  }

  package func editionMark() -> EditionMark? { locked { $0.mark } }

  package func setEditionMark(_ mark: EditionMark) { locked { $0.mark = mark } }

  package func hasEntries(of edition: String) -> Bool {
    locked { state in state.map.valuesOldestFirst.contains { $0.edition == edition } }
  }

  package func statistics() -> CacheStatistics {
    locked { state in
      var perEdition: [String: Int] = [:]
      for entry in state.map.valuesOldestFirst { perEdition[entry.edition, default: 0] += 1 }
      return CacheStatistics(entriesPerEdition: perEdition, bytes: 0, edition: state.mark)
    }
  }

  package func clear() {
    locked { state in
      state.map = RecencyMap(capacity: state.map.capacity)
      state.mark = nil
    }
  }

  /// Marks `ceps` most recently used, as a read does.
  package func noteUsed(_ ceps: some Collection<Int>, now: Date) {
    locked { state in
      for cep in ceps { _ = state.map.value(for: cep) }
    }
  }

  /// `false`, delivering nothing: the memory store holds what this process asked, so a bulk
  /// run finds it as fast CEP by CEP as in one pass.
  package func allBatchAnswers(
    edition: String, limit: Int, now: Date, batchSize: Int,
    deliver: (_ answers: [PreloadedAnswer], _ total: Int) -> Bool
  ) -> Bool { false }

  /// Nothing to release: the entries stay.
  package func close() {}
}
