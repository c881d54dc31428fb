import CepisSupport
import Foundation

/// The CEPs a file store was asked for (or answered from a memory tier in front of it) whose
/// recency is not yet written, and when the oldest and the newest of those uses were (by the
/// cache's clock).
///
/// `used_at` is not written on every read: the uses are remembered here and written with the
/// file's next write transaction (or once ``dueCount`` are pending, or ``granularity`` seconds
/// have passed), and only where the stored time is older than that — recency to the minute
/// is all eviction needs. Noting a use never waits for the file.
final class PendingUses: Sendable {
  /// Recency is kept to this many seconds.
  static let granularity: Int64 = 60
  /// How many pending uses make a read write them.
  static let dueCount = 256

  private let state = LockedValue(State())

  private struct State: Sendable {
    var ceps: Set<Int> = []
    var oldest: Date?
    var newest: Date?

    mutating func forget(_ written: Set<Int>) {
      ceps.subtract(written)
      if ceps.isEmpty {
        oldest = nil
        newest = nil
      }
    }
  }

  /// `date` in whole seconds since 1970, as `used_at` keeps it.
  static func second(of date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

  /// Remembers that `ceps` were used at `now`.
  func note(_ ceps: some Collection<Int>, now: Date) {
    guard !ceps.isEmpty else { return }
    state.withLock { pending in
      pending.ceps.formUnion(ceps)
      if pending.oldest == nil { pending.oldest = now }
      pending.newest = max(pending.newest ?? now, now)
    }
  }

  /// Whether the uses pending are to be written now, not with the next write: too many, or
  /// the oldest too old.
  func areDue(now: Date) -> Bool {
    state.withLock { pending in
      pending.oldest.map {
        pending.ceps.count >= Self.dueCount
          || now.timeIntervalSince($0) >= Double(Self.granularity)
      } ?? false
    }
  }

  /// When the last use pending was noted; `nil` when none is.
  var newest: Date? { state.withLock { $0.ceps.isEmpty ? nil : $0.newest } }

  /// Forgets every use pending (the file was cleared, or moved aside).
  func forgetAll() { state.withLock { $0 = State() } }

  /// Runs `body` in a write transaction on `db` that first writes the recency (as of `now`) of
  /// the uses pending; they are forgotten once it commits (kept for the next one if not).
  func writeTransaction(
    _ db: SQLiteConnection, now: Date, _ body: () throws -> Void
  ) throws {
    let written = state.withLock { $0.ceps }
    try db.writeTransaction {
      let usedAt = Self.second(of: now)
      for cep in written.sorted() {
        try db.run(
          "UPDATE entries SET used_at = ?1 WHERE cep = ?2 AND used_at < ?1 - ?3",
          [.int(usedAt), .int(Int64(cep)), .int(Self.granularity)])
      }
      try body()
    }
    if !written.isEmpty { state.withLock { $0.forget(written) } }
  }
}
