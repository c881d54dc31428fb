import CepisSupport
import Foundation

/// The file store of ``AddressCache/sqlite(at:maxBytes:revalidateEvery:onWarning:)``: one
/// SQLite database in WAL mode, shared by every process that opens it. This type reads and
/// writes entries; the file itself (its schema, opening it, moving it aside) is
/// ``SQLiteCacheFile``'s, the `entries` table's columns and statements ``EntriesTable``'s.
///
/// - Every write transaction starts as `BEGIN IMMEDIATE`, under a 5 s busy timeout and a few
///   retries of its own (``SQLiteConnection/writeTransaction(_:)``): processes wait for each
///   other instead of failing.
/// - `synchronous=NORMAL` in WAL mode: a committed transaction survives the process being
///   killed (`kill -9`); only a power loss may take back the last ones, which a cache can
///   afford.
/// - Rows are kept in the order they were stored (a rowid), found through a unique index on
///   the CEP (schema 2). A chunk's CEPs are spread over the whole range, so a table keyed by
///   CEP (schema 1) rewrote a page per answer in every transaction (some 500 a chunk);
///   in arrival order a chunk fills a few pages, and only the small index is written all over.
///   There is no index on `used_at`: eviction, rare, scans.
/// - Bounded by `maxBytes` (`page_count × page_size`, checked after each write transaction):
///   entries of other editions go first, then the least recently used. Recency is written
///   behind the reads (``PendingUses``).
///
/// `@unchecked Sendable` is sound: the one stored property that changes, `connection`, is
/// read and written only while `lock` is held, for the whole of each method that uses it
/// (``withConnection(_:)`` and ``close()``); the uses not yet written (`uses`) are a
/// `Sendable` type with a lock of its own, so that ``noteUsed(_:now:)`` never waits for the
/// file; the rest is immutable and `Sendable`.
package final class SQLiteCacheStore: CacheStore, @unchecked Sendable {
  /// A file: every operation may wait for the disk or another process's transaction.
  package var waitsForIO: Bool { true }

  /// The schema this code writes and reads.
  static var schemaVersion: Int64 { SQLiteCacheFile.schemaVersion }

  /// The database file.
  package var url: URL { file.url }
  /// The size bound, in bytes.
  package var maxBytes: Int { file.maxBytes }
  private let file: SQLiteCacheFile
  private let warn: @Sendable (String) -> Void
  private let lock = NSLock()
  private var connection: SQLiteConnection?
  private let uses = PendingUses()

  /// A store at `url` on the system SQLite; `nil` when SQLite cannot be loaded. Nothing is
  /// opened until the first call.
  package convenience init?(
    url: URL, maxBytes: Int, warn: @escaping @Sendable (String) -> Void
  ) {
    guard let library = SQLiteLibrary.shared else { return nil }
    self.init(url: url, maxBytes: maxBytes, library: library, warn: warn)
  }

  /// A store at `url` on `library`; nothing is opened until the first call.
  init(
    url: URL, maxBytes: Int, library: SQLiteLibrary,
    warn: @escaping @Sendable (String) -> Void
  ) {
    file = SQLiteCacheFile(url: url, maxBytes: max(0, maxBytes), library: library)
    self.warn = warn
  }

  deinit {
    connection?.close()
  }

  // MARK: Reads

  package func entries(for ceps: [Int], now: Date) throws -> [Int: CacheEntry] {
    try withConnection { db in
      var found: [Int: CacheEntry] = [:]
      found.reserveCapacity(ceps.count)
      // Only entries whose recency is out of date are noted: a run that reads what it (or
      // another run) used within the minute writes nothing back.
      var used: [Int] = []
      let oldest = PendingUses.second(of: now) - PendingUses.granularity
      try db.transaction {
        // In key order (neighbouring CEPs share B-tree pages, read once), up to
        // ``EntriesTable/readBatch`` CEPs a statement: one statement, padded with -1 (no
        // CEP), whatever the count.
        let sorted = ceps.sorted()
        let readBatch = EntriesTable.readBatch
        var start = 0
        while start < sorted.count {
          let end = min(sorted.count, start + readBatch)
          var values = sorted[start..<end].map { SQLiteConnection.Value.int(Int64($0)) }
          values += repeatElement(.int(-1), count: readBatch - values.count)
          try db.run(EntriesTable.selectManySQL, values) { row in
            let entry = EntriesTable.entry(row)
            found[entry.cep] = entry
            if row.int(.usedAt) < oldest { used.append(entry.cep) }
          }
          start = end
        }
      }
      uses.note(used, now: now)
      if uses.areDue(now: now) { try uses.writeTransaction(db, now: now) {} }
      return found
    }
  }

  /// The answer of every entry of `edition` as the bulk path serves it (an address without
  /// `geo`, packed as a batch answer's; `nil` for "does not exist"), in one pass over the
  /// table and one read transaction, handed to `deliver` `batchSize` at a time as they are
  /// read, each with whether its recency is out of date (a use would be noted, as
  /// ``entries(for:now:)`` notes it). `deliver` is first told how many there are, and returns
  /// `false` to stop the pass. Returns whether every answer was delivered: `false` (and
  /// nothing delivered) when there are more than `limit`, or when `deliver` stopped it. For a
  /// bulk run that will ask for about as many CEPs as the file holds (see
  /// `LookupAsks.startPreloadIfWorthIt()`): a scan costs a fraction of a look-up per CEP.
  func allBatchAnswers(
    edition: String, limit: Int, now: Date, batchSize: Int,
    deliver: (_ answers: [PreloadedAnswer], _ total: Int) -> Bool
  ) throws -> Bool {
    try withConnection { db in
      try db.transaction { () -> Bool in
        let count = try db.integer(
          "SELECT count(*) FROM entries WHERE edition = ?", [.text(edition)])
        guard count <= Int64(limit) else { return false }
        let total = Int(count)
        var batch: [PreloadedAnswer] = []
        batch.reserveCapacity(min(batchSize, total))
        let oldest = PendingUses.second(of: now) - PendingUses.granularity
        do {
          try withoutActuallyEscaping(deliver) { deliver in
            try db.run(EntriesTable.scanEditionSQL, [.text(edition)]) { row in
              let cep = Int(row.int(.cep))
              let address = EntriesTable.batchAddress(row, cep: cep)
              batch.append(
                PreloadedAnswer(cep: cep, address: address, stale: row.int(.usedAt) < oldest))
              if batch.count >= batchSize {
                guard deliver(batch, total) else { throw ScanStopped() }
                batch.removeAll(keepingCapacity: true)
              }
            }
          }
          return batch.isEmpty ? true : deliver(batch, total)
        } catch is ScanStopped {
          return false
        }
      }
    }
  }

  /// How ``allBatchAnswers(edition:limit:now:batchSize:deliver:)`` leaves its pass early.
  private struct ScanStopped: Error {}

  package func editionMark() throws -> EditionMark? {
    try withConnection { db in
      var edition: String?
      var checkedAt: Double?
      try db.run("SELECT key, value FROM meta WHERE key IN ('edition', 'edition_checked_at')") {
        row in
        if row.text(0) == "edition" {
          edition = row.text(1)
        } else {
          checkedAt = Double(row.text(1))
        }
      }
      guard let edition, let checkedAt else { return nil }
      return EditionMark(edition: edition, checkedAt: Date(timeIntervalSince1970: checkedAt))
    }
  }

  package func hasEntries(of edition: String) throws -> Bool {
    // From the newest row back: a file in use finds one at once; only a file holding none
    // (a new edition) is read through, once per run.
    try withConnection { db in
      try db.integer(
        "SELECT EXISTS (SELECT 1 FROM entries WHERE edition = ? ORDER BY id DESC)",
        [.text(edition)]) != 0
    }
  }

  func statistics() throws -> CacheStatistics {
    let perEdition = try withConnection { db in
      var counts: [String: Int] = [:]
      try db.run("SELECT edition, count(*) FROM entries GROUP BY edition") { row in
        counts[row.text(0)] = Int(row.int(1))
      }
      return counts
    }
    let bytes = try withConnection { try Self.size(of: $0) }
    return CacheStatistics(entriesPerEdition: perEdition, bytes: bytes, edition: try editionMark())
  }

  // MARK: Writes

  package func store(_ entries: [CacheEntry], liveEdition: String, now: Date) throws {
    try withConnection { db in
      try uses.writeTransaction(db, now: now) {
        let usedAt = PendingUses.second(of: now)
        // In key order: neighbouring CEPs share B-tree pages, written once. Each CEP is
        // sorted with its position, not the entries (an entry is large), and a CEP stored
        // twice in one group keeps its order: the later answer is the one kept. Both in one
        // integer (a CEP has 27 bits, a position fewer than 36), sorted without a closure.
        let order = entries.indices.map { UInt64(entries[$0].cep) << 36 | UInt64($0) }.sorted()
        // ``EntriesTable/upsertRows`` entries a statement while that many are left, then one
        // at a time: one run of the statement's program, not one per row (with its statement
        // journal in memory, see ``SQLiteCacheFile``: less of this thread's CPU in a first bulk
        // run, measured in `5762576`; Benchmarks/ANALYSIS.md, "The cache file"). The rows of
        // one statement are inserted in their order, so a CEP twice in one statement is still
        // kept as its later answer.
        let manyRows = EntriesTable.upsertRows
        let width = EntriesTable.columnCount
        var next = 0
        while next < order.count {
          let rows = order.count - next >= manyRows ? manyRows : 1
          try db.runBound(rows == 1 ? EntriesTable.upsertSQL : EntriesTable.upsertManySQL) {
            bind in
            for row in 0..<rows {
              let position = Int(order[next + row] & (1 << 36 - 1))
              EntriesTable.bind(
                entries, position, usedAt: usedAt, from: width * Int32(row), into: &bind)
            }
          }
          next += rows
        }
      }
      try keepWithinBound(db, liveEdition: liveEdition)
    }
  }

  /// Remembers that `ceps` were used (read from a memory tier in front of the file), to be
  /// written with the next write transaction; never waits for the file.
  package func noteUsed(_ ceps: some Collection<Int>, now: Date) {
    uses.note(ceps, now: now)
  }

  package func setEditionMark(_ mark: EditionMark) throws {
    try withConnection { db in
      try db.writeTransaction {
        try db.run(
          "INSERT OR REPLACE INTO meta(key, value) VALUES ('edition', ?), ('edition_checked_at', ?)",
          [.text(mark.edition), .text(String(mark.checkedAt.timeIntervalSince1970))])
      }
    }
  }

  package func clear() throws {
    try withConnection { db in
      uses.forgetAll()
      try db.writeTransaction {
        try db.run("DELETE FROM entries")
        try db.run("DELETE FROM meta WHERE key IN ('edition', 'edition_checked_at')")
      }
      try db.run("PRAGMA incremental_vacuum")
    }
  }

  /// Closes the connection (the next call opens it again); pending recency is written first.
  func close() {
    lock.lock()
    defer { lock.unlock() }
    // Pending uses are written as of the last one noted: the cache's clock, not the wall's.
    if let connection, let newest = uses.newest {
      try? uses.writeTransaction(connection, now: newest) {}
    }
    connection?.close()
    connection = nil
  }

  private static func size(of db: SQLiteConnection) throws -> Int {
    Int(try db.integer("PRAGMA page_count")) * Int(try db.integer("PRAGMA page_size"))
  }

  /// Evicts until the file is within ``maxBytes``, to 90 % of it so that the next chunks do
  /// not evict again at once: other editions first, then the least recently used.
  private func keepWithinBound(_ db: SQLiteConnection, liveEdition: String) throws {
    for _ in 0..<16 {
      let pageSize = Int(try db.integer("PRAGMA page_size"))
      let pages = Int(try db.integer("PRAGMA page_count"))
      guard pages * pageSize > maxBytes else { return }
      let free = Int(try db.integer("PRAGMA freelist_count"))
      let rows = Int(try db.integer("SELECT count(*) FROM entries"))
      if rows == 0 {
        try db.run("PRAGMA incremental_vacuum")
        return
      }
      let usedBytes = max(pageSize, (pages - free) * pageSize)
      let perRow = max(1, usedBytes / rows)
      let excess = max(0, usedBytes - maxBytes * 9 / 10)
      var toDelete = min(rows, max(16, excess / perRow + 1))
      try db.writeTransaction {
        try db.run(
          """
          DELETE FROM entries WHERE cep IN (SELECT cep FROM entries WHERE edition <> ? \
          ORDER BY used_at, cep LIMIT ?)
          """, [.text(liveEdition), .int(Int64(toDelete))])
        toDelete -= db.changes
        if toDelete > 0 {
          try db.run(
            "DELETE FROM entries WHERE cep IN (SELECT cep FROM entries ORDER BY used_at, cep LIMIT ?)",
            [.int(Int64(toDelete))])
        }
      }
      try db.run("PRAGMA incremental_vacuum")
    }
  }

  // MARK: The connection

  /// Runs `body` on the open connection (opening the file when needed), under the lock. A
  /// damaged file found on the way is moved aside (the call still fails; the next one uses
  /// the fresh file). Warnings raised meanwhile are given to `warn` once the lock is released:
  /// a caller's `onWarning` never runs under one of our locks (it may call back into the
  /// cache).
  private func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
    var raised: [String] = []
    // Declared first, so it runs last: after the unlock.
    defer { for warning in raised { warn(warning) } }
    lock.lock()
    defer { lock.unlock() }
    do {
      let db: SQLiteConnection
      if let connection {
        db = connection
      } else {
        db = try file.open(warnings: &raised)
        connection = db
      }
      return try body(db)
    } catch let error as SQLiteError where error.meansUnusableFile {
      connection?.close()
      connection = nil
      uses.forgetAll()
      raised.append(file.moveAside(reason: "it is damaged (\(error.message))"))
      throw error
    }
  }
}
