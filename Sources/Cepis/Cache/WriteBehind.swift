import CepisSupport
import Foundation

/// A file cache's queue and the answers waiting on it to be written: the write-behind of
/// ``AddressCache/storeBehind(_:kind:edition:)``.
///
/// Every use of the file runs on one thread of its own (``AddressCache/fileThreadNice``), off
/// the cooperative pool: a busy file may make a statement wait, and that wait must not hold
/// one of the pool's few threads. A bulk run's answers are gathered in a backlog and written
/// in one transaction once ``groupEntries`` wait (a group commit: a chunk is never split
/// between two); at the latest `flushDelay` after the first of them; and at once before any
/// other use of the file (``afterBacklog(on:_:)``): reads, writes and drains keep the order
/// they were asked in. Past ``entriesBehind`` waiting answers, a chunk waits for its own.
final class WriteBehind: Sendable {
  /// How many answers a run's writes gather before they go to the file in one transaction.
  ///
  /// A chunk's 500 CEPs land all over the file's CEP index, and a transaction writes every
  /// index page it touches to the write-ahead log again, however few of its entries the page
  /// gained: the fewer the transactions, the fewer the pages written. 16,000 answers (32
  /// chunks) to a transaction gained the most of the sizes tried (8,000 less, 32,000 no more:
  /// the A/B of `a419ce8`; Benchmarks/RESULTS.md, row `cached enrich, first run`).
  static let groupEntries = 16_000

  /// How many answers may wait for the file while their rows go on (128,000, a few tens of
  /// MiB); past that, a chunk waits for its own to be written. The file's thread runs at a
  /// lower priority (``AddressCache/fileThreadNice``): on busy cores it falls behind while the
  /// run goes on, and catches up when the run leaves a core idle (at the price of a first
  /// `cepis enrich`'s peak RSS, higher than with a backlog of 32,000; `6427437`).
  static let entriesBehind = 8 * groupEntries

  /// Serializes the store's work: a file's at a lower priority than the program's own.
  private let queue: LowPriorityThread
  private let backlog = LockedValue(Backlog())
  /// The longest a stored answer waits for a group to fill before it is written anyway.
  private let flushDelay: DispatchTimeInterval
  private let warnings: CacheWarnings

  /// Chunks' answers waiting to be written to the file, and whether a writer is on the queue
  /// for them.
  private struct Backlog: Sendable {
    var chunks: [Pending] = []
    /// The entries of `chunks`.
    var entries = 0
    /// Whether a writer is on the queue for a full group (or a chunk that waits).
    var writerQueued = false
    /// Whether a flush is due on the queue after `flushDelay`.
    var flushScheduled = false

    /// Whether what waits is to be written now: a group's worth, or a chunk waits for it.
    var isDue: Bool {
      entries >= WriteBehind.groupEntries || chunks.contains { $0.waiter != nil }
    }
  }

  /// One chunk's answers to write; `waiter` resumes once they are.
  private struct Pending: Sendable {
    var entries: [CacheEntry]
    var edition: String
    var now: Date
    var waiter: CheckedContinuation<Void, Never>?
  }

  /// What runs ``writeBacklog(to:trigger:)``.
  private enum WriteTrigger {
    /// The writer ``enqueue(_:on:)`` queued: writes due groups, and is no longer queued.
    case writer
    /// The flush ``enqueue(_:on:)`` scheduled: writes everything, and is no longer scheduled.
    case timer
    /// Another use of the file, or a drain: writes everything first.
    case flush
  }

  /// A write-behind whose answers wait at most `flushDelay` for a group, whose failed writes
  /// are issued to `warnings`, and whose thread runs at `niceValue` (a file's:
  /// ``AddressCache/fileThreadNice``; a server's: ``AddressCache/serverThreadNice``).
  init(flushDelay: DispatchTimeInterval, warnings: CacheWarnings, niceValue: Int32) {
    queue = LowPriorityThread(name: "cepis-cache", niceValue: niceValue)
    self.flushDelay = flushDelay
    self.warnings = warnings
  }

  /// Runs `body` on the queue once every answer waiting is written to `store`: answers stored
  /// before a use of the file are written before it, in the order asked.
  func afterBacklog<T: Sendable>(
    on store: any CacheStore, _ body: @escaping @Sendable () -> T
  ) async -> T {
    await withCheckedContinuation { continuation in
      queue.async { [self] in
        writeBacklog(to: store, trigger: .flush)
        continuation.resume(returning: body())
      }
    }
  }

  /// Adds one chunk's `entries` to the backlog, to be written to `store` in a group; returns
  /// at once while fewer than ``entriesBehind`` answers wait, else once they are written.
  func add(_ entries: [CacheEntry], edition: String, now: Date, to store: any CacheStore) async {
    let pending = Pending(entries: entries, edition: edition, now: now, waiter: nil)
    let mustWait = backlog.withLock { $0.entries >= Self.entriesBehind }
    guard mustWait else { return enqueue(pending, on: store) }
    await withCheckedContinuation { continuation in
      var waiting = pending
      waiting.waiter = continuation
      enqueue(waiting, on: store)
    }
  }

  /// Adds `pending` to the backlog, and a writer to the queue when a group is due and none is
  /// there for it (else a flush after `flushDelay`, when none is due yet).
  private func enqueue(_ pending: Pending, on store: any CacheStore) {
    enum Next { case nothing, writer, flush }
    let next = backlog.withLock { backlog -> Next in
      backlog.chunks.append(pending)
      backlog.entries += pending.entries.count
      if backlog.isDue {
        guard !backlog.writerQueued else { return .nothing }
        backlog.writerQueued = true
        return .writer
      }
      guard !backlog.flushScheduled else { return .nothing }
      backlog.flushScheduled = true
      return .flush
    }
    switch next {
    case .nothing: break
    case .writer: queue.async { [self] in writeBacklog(to: store, trigger: .writer) }
    case .flush:
      queue.asyncAfter(flushDelay) { [self] in
        writeBacklog(to: store, trigger: .timer)
      }
    }
  }

  /// On the queue: writes what waits, every chunk that waits in one transaction, while a
  /// group is due (or, but for the writer, until nothing waits). A failed write is a warning.
  private func writeBacklog(to store: any CacheStore, trigger: WriteTrigger) {
    if trigger == .timer { backlog.withLock { $0.flushScheduled = false } }
    while true {
      let chunks = backlog.withLock { backlog -> [Pending] in
        guard trigger != .writer || backlog.isDue else {
          backlog.writerQueued = false
          return []
        }
        let taken = backlog.chunks
        backlog.chunks.removeAll(keepingCapacity: true)
        backlog.entries = 0
        if taken.isEmpty && trigger == .writer { backlog.writerQueued = false }
        return taken
      }
      guard let last = chunks.last else { break }
      let entries = chunks.flatMap(\.entries)
      do {
        try store.store(entries, liveEdition: last.edition, now: last.now)
      } catch {
        warnings.stepAside("store answers", error)
      }
      for chunk in chunks { chunk.waiter?.resume() }
    }
  }
}
