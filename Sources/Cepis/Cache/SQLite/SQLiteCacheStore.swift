import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The file store of ``AddressCache/sqlite(at:maxBytes:revalidateEvery:onWarning:)``: one
/// SQLite database in WAL mode, shared by every process that opens it.
///
/// - Every write transaction starts as `BEGIN IMMEDIATE` (so it never has to upgrade a read
///   lock, the one case a busy timeout cannot resolve), under a 5 s busy timeout and a few
///   retries of its own: processes wait for each other instead of failing.
/// - `synchronous=NORMAL` in WAL mode: a committed transaction survives the process being
///   killed (`kill -9`); only a power loss may take back the last ones, which a cache can
///   afford.
/// - A file that is damaged, not a database, not ours, or of a newer schema
///   (`PRAGMA user_version` above ``schemaVersion``) is renamed
///   `<name>.corrupt-<UTC timestamp>` (its `-wal` and `-shm` beside it) and a fresh one starts,
///   with one warning.
/// - Rows are kept in the order they were stored (a rowid), found through a unique index on
///   the CEP (schema 2). A chunk's CEPs are spread over the whole range, so a table keyed by
///   CEP (schema 1) rewrote a page per answer in every transaction (some 500 a chunk);
///   in arrival order a chunk fills a few pages, and only the small index is written all over.
///   There is no index on `used_at`: eviction, rare, scans. A file of schema 1 is moved aside
///   like any other it cannot use, and a fresh one starts.
/// - Bounded by `maxBytes` (`page_count × page_size`, checked after each write transaction):
///   entries of other editions go first, then the least recently used. `used_at` is not
///   written on every read: the CEPs read are remembered and written with the next write
///   transaction (or once 256 are pending, or a minute has passed), and only where the stored
///   time is more than a minute old — recency to the minute is all eviction needs.
///
/// `@unchecked Sendable` is sound: the one stored property that changes, `connection`, is
/// read and written only while `lock` is held, for the whole of each public method; the
/// CEPs read and not yet written back (`touches`) have a lock of their own, so that
/// ``noteUsed(_:now:)`` never waits for the file; the rest is immutable.
package final class SQLiteCacheStore: CacheStore, @unchecked Sendable {
  /// A file: every operation may wait for the disk or another process's transaction.
  package var waitsForIO: Bool { true }

  /// The schema this code writes and reads.
  package static let schemaVersion: Int64 = 2
  /// The `meta` row that tells our files from other SQLite databases.
  static let schemaMarker = "cepis-address-cache"
  /// Recency is kept to this many seconds.
  static let touchGranularity: Int64 = 60
  /// `date` in whole seconds since 1970, as `used_at` keeps it.
  static func second(of date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }
  /// Busy waiting per statement, in milliseconds.
  static let busyTimeout: Int32 = 5_000

  /// The database file.
  package let url: URL
  /// The size bound, in bytes.
  package let maxBytes: Int
  private let library: SQLiteLibrary
  private let warn: @Sendable (String) -> Void
  /// Warnings raised while `lock` is held, given to `warn` once it is released: a caller's
  /// `onWarning` never runs under one of our locks (it may call back into the cache).
  private let heldWarnings = LockedValue<[String]>([])
  private let lock = NSLock()
  private var connection: SQLiteConnection?
  private let touches = LockedValue(PendingTouches())

  /// The CEPs read since recency was last written, and when the oldest and the newest of
  /// them were read (by the cache's clock).
  private struct PendingTouches: Sendable {
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
    self.url = url
    self.maxBytes = max(0, maxBytes)
    self.library = library
    self.warn = warn
  }

  deinit {
    connection?.close()
  }

  // MARK: CacheStore

  package func entries(for ceps: [Int], now: Date) throws -> [Int: CacheEntry] {
    try withConnection { db in
      var found: [Int: CacheEntry] = [:]
      found.reserveCapacity(ceps.count)
      // Only entries whose recency is out of date are noted: a run that reads what it (or
      // another run) used within the minute writes nothing back.
      var used: [Int] = []
      let seconds = Self.second(of: now)
      try db.run("BEGIN")
      do {
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
            if row.int(.usedAt) < seconds - Self.touchGranularity { used.append(entry.cep) }
          }
          start = end
        }
        try db.run("COMMIT")
      } catch {
        try? db.run("ROLLBACK")
        throw error
      }
      noteUsed(used, now: now)
      let due = touches.withLock { pending in
        pending.oldest.map {
          pending.ceps.count >= 256
            || now.timeIntervalSince($0) >= Double(Self.touchGranularity)
        } ?? false
      }
      if due { try writeTransactionWritingTouches(db, now: now) {} }
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
  package func allBatchAnswers(
    edition: String, limit: Int, now: Date, batchSize: Int,
    deliver: (_ answers: [PreloadedAnswer], _ total: Int) -> Bool
  ) throws -> Bool {
    try withConnection { db in
      try db.run("BEGIN")
      do {
        let count = try db.integer(
          "SELECT count(*) FROM entries WHERE edition = ?", [.text(edition)])
        guard count <= Int64(limit) else {
          try db.run("COMMIT")
          return false
        }
        let total = Int(count)
        var batch: [PreloadedAnswer] = []
        batch.reserveCapacity(min(batchSize, total))
        let oldest = Self.second(of: now) - Self.touchGranularity
        var complete = true
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
          if !batch.isEmpty { complete = deliver(batch, total) }
        } catch is ScanStopped {
          complete = false
        }
        try db.run("COMMIT")
        return complete
      } catch {
        try? db.run("ROLLBACK")
        throw error
      }
    }
  }

  /// How ``allBatchAnswers(edition:limit:now:batchSize:deliver:)`` leaves its pass early.
  private struct ScanStopped: Error {}

  package func store(_ entries: [CacheEntry], liveEdition: String, now: Date) throws {
    try withConnection { db in
      try writeTransactionWritingTouches(db, now: now) {
        let usedAt = Self.second(of: now)
        // In key order: neighbouring CEPs share B-tree pages, written once. Each CEP is
        // sorted with its position, not the entries (an entry is large), and a CEP stored
        // twice in one group keeps its order: the later answer is the one kept. Both in one
        // integer (a CEP has 27 bits, a position fewer than 36), sorted without a closure.
        let order = entries.indices.map { UInt64(entries[$0].cep) << 36 | UInt64($0) }.sorted()
        // ``EntriesTable/upsertRows`` entries a statement while that many are left, then one
        // at a time: one run of the statement's program, not one per row (with its statement
        // journal in memory, see `prepare`: less of this thread's CPU in a first bulk run,
        // measured in `5762576`; Benchmarks/ANALYSIS.md, "The cache file"). The rows of one
        // statement are inserted in their order, so a CEP twice in one statement is still
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
    guard !ceps.isEmpty else { return }
    touches.withLock { pending in
      pending.ceps.formUnion(ceps)
      if pending.oldest == nil { pending.oldest = now }
      pending.newest = max(pending.newest ?? now, now)
    }
  }

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

  package func setEditionMark(_ mark: EditionMark) throws {
    try withConnection { db in
      try writeTransaction(db) {
        try db.run(
          "INSERT OR REPLACE INTO meta(key, value) VALUES ('edition', ?), ('edition_checked_at', ?)",
          [.text(mark.edition), .text(String(mark.checkedAt.timeIntervalSince1970))])
      }
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

  package func statistics() throws -> CacheStatistics {
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

  package func clear() throws {
    try withConnection { db in
      touches.withLock { $0 = PendingTouches() }
      try writeTransaction(db) {
        try db.run("DELETE FROM entries")
        try db.run("DELETE FROM meta WHERE key IN ('edition', 'edition_checked_at')")
      }
      try db.run("PRAGMA incremental_vacuum")
    }
  }

  /// Closes the connection (the next call opens it again); pending recency is written first.
  package func close() {
    lock.lock()
    defer { lock.unlock() }
    // Pending uses are written as of the last one noted: the cache's clock, not the wall's.
    if let connection, let newest = touches.withLock({ $0.ceps.isEmpty ? nil : $0.newest }) {
      try? writeTransactionWritingTouches(connection, now: newest) {}
    }
    connection?.close()
    connection = nil
  }

  static let schemaSQL = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    EntriesTable.createSQL,
    "INSERT INTO meta (key, value) VALUES ('schema', '\(schemaMarker)')",
    "PRAGMA user_version = \(schemaVersion)",
  ]

  // MARK: Transactions, bound, recency

  /// Runs `body` in a transaction begun with `BEGIN IMMEDIATE`, retried while another
  /// process holds the write lock beyond the busy timeout.
  private func writeTransaction(_ db: SQLiteConnection, _ body: () throws -> Void) throws {
    var attempt = 0
    while true {
      do {
        try db.run("BEGIN IMMEDIATE")
        break
      } catch let error as SQLiteError
        where (error.code == SQLiteCode.busy || error.code == SQLiteCode.locked) && attempt < 6
      {
        attempt += 1
        usleep(UInt32(20_000 * attempt + Int.random(in: 0..<20_000)))
      }
    }
    do {
      try body()
      try db.run("COMMIT")
    } catch {
      try? db.run("ROLLBACK")
      throw error
    }
  }

  /// Runs `body` in a write transaction that first writes the recency of the CEPs read
  /// since the last one; they are forgotten once it commits (kept for the next one if not).
  private func writeTransactionWritingTouches(
    _ db: SQLiteConnection, now: Date, _ body: () throws -> Void
  ) throws {
    let written = touches.withLock { $0.ceps }
    try writeTransaction(db) {
      let usedAt = Self.second(of: now)
      for cep in written.sorted() {
        try db.run(
          "UPDATE entries SET used_at = ?1 WHERE cep = ?2 AND used_at < ?1 - ?3",
          [.int(usedAt), .int(Int64(cep)), .int(Self.touchGranularity)])
      }
      try body()
    }
    if !written.isEmpty { touches.withLock { $0.forget(written) } }
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
      try writeTransaction(db) {
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

  // MARK: Opening, validating, moving aside

  /// Runs `body` on the open connection, under the lock. A damaged file found on the way is
  /// moved aside (the call still fails; the next one uses the fresh file).
  private func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
    // Declared first, so it runs last: after the unlock.
    defer { deliverHeldWarnings() }
    lock.lock()
    defer { lock.unlock() }
    do {
      let db = try openIfNeeded()
      return try body(db)
    } catch let error as SQLiteError where error.meansUnusableFile {
      connection?.close()
      connection = nil
      touches.withLock { $0 = PendingTouches() }
      moveAside(reason: "it is damaged (\(error.message))")
      throw error
    }
  }

  private func openIfNeeded() throws -> SQLiteConnection {
    if let connection { return connection }
    for attempt in 0..<2 {
      let db = try open()
      do {
        if let problem = try prepare(db) {
          db.close()
          guard attempt == 0 else { throw SQLiteError(code: SQLiteCode.error, message: problem) }
          moveAside(reason: problem)
          continue
        }
        connection = db
        return db
      } catch let error as SQLiteError where error.meansUnusableFile && attempt == 0 {
        db.close()
        moveAside(reason: "it is damaged (\(error.message))")
      }
    }
    throw SQLiteError(code: SQLiteCode.error, message: "cannot start a fresh cache file")
  }

  /// Creates the folder (0700) and the file (0600) when missing, and opens the connection.
  private func open() throws -> SQLiteConnection {
    let folder = url.deletingLastPathComponent()
    try Self.createFolder(folder)
    let path = url.path
    createPrivateFile(path)
    return try SQLiteConnection(library: library, path: path, busyTimeout: Self.busyTimeout)
  }

  /// Creates `folder` and any missing parent, each `0700` whatever the umask.
  static func createFolder(_ folder: URL) throws {
    var missing: [String] = []
    var cursor = folder.standardizedFileURL
    while !FileManager.default.fileExists(atPath: cursor.path), cursor.path != "/" {
      missing.append(cursor.path)
      cursor = cursor.deletingLastPathComponent()
    }
    for path in missing.reversed() {
      if mkdir(path, 0o700) != 0 && errno != EEXIST {
        throw SQLiteError(
          code: SQLiteCode.error, message: "cannot create folder \(path): errno \(errno)")
      }
      _ = chmod(path, 0o700)
    }
  }

  /// Checks the file is ours — before changing anything in it, so that a file moved aside
  /// keeps its bytes — creating the schema in an empty file, then sets the connection up;
  /// returns why the file must be moved aside, or `nil` when it is fine.
  private func prepare(_ db: SQLiteConnection) throws -> String? {
    // The version and the tables read in one snapshot: another process creating the schema
    // commits both at once, and reading them apart could see its tables without its version.
    var version: Int64 = 0
    var tables: Int64 = 0
    try db.run("BEGIN")
    do {
      version = try db.integer("PRAGMA user_version")
      if version == 0 { tables = try db.integer("SELECT count(*) FROM sqlite_master") }
      try db.run("COMMIT")
    } catch {
      try? db.run("ROLLBACK")
      throw error
    }
    if version > Self.schemaVersion {
      return
        "its schema (version \(version)) is newer than this Cepis reads (\(Self.schemaVersion))"
    }
    if version == 0 {
      guard tables == 0 else { return "it is not a Cepis cache" }
      // Only effective before the first table exists: lets the file shrink after evictions.
      try db.run("PRAGMA auto_vacuum = INCREMENTAL")
      try db.run("PRAGMA journal_mode = WAL")
      try writeTransaction(db) {
        // Another process may have created it meanwhile.
        version = try db.integer("PRAGMA user_version")
        let tables = try db.integer("SELECT count(*) FROM sqlite_master")
        guard version == 0, tables == 0 else { return }
        for sql in Self.schemaSQL { try db.run(sql) }
        version = Self.schemaVersion
      }
    }
    let marker: String?
    do {
      marker = try db.text("SELECT value FROM meta WHERE key = 'schema'")
    } catch let error as SQLiteError where !error.meansUnusableFile {
      marker = nil
    }
    guard marker == Self.schemaMarker else { return "it is not a Cepis cache" }
    guard version == Self.schemaVersion else {
      return "its schema (version \(version)) is older than this Cepis writes "
        + "(\(Self.schemaVersion))"
    }
    try db.run("PRAGMA journal_mode = WAL")
    try db.run("PRAGMA synchronous = NORMAL")
    try db.run("PRAGMA journal_size_limit = 4194304")
    // A statement that writes several rows (``EntriesTable/upsertManySQL``) keeps a statement journal,
    // to undo itself alone if it fails halfway; past 64 KiB SQLite spills it to a temporary
    // file (a first `cepis enrich` wrote its journals there and threw them away, and every
    // write needed a writable temporary folder; `5762576`). In memory, it is a few pages,
    // freed with each statement.
    try db.run("PRAGMA temp_store = MEMORY")
    // A chunk's answers land on pages all over the file: a page cache of 8 MiB (default 2)
    // keeps the upper levels and recent pages from being read again, and a checkpoint every
    // 4,096 pages (default 1,000) copies a page rewritten by several chunks back once.
    try db.run("PRAGMA cache_size = -8192")
    try db.run("PRAGMA wal_autocheckpoint = 4096")
    // Pages read through a memory map of the file, not copied by `pread` into the page cache:
    // a run's reads land on pages all over a file several times the page cache's size, and
    // the copies were a large part of their cost (a second `cepis enrich` through the cache,
    // the A/B of `1caf81f`; Benchmarks/RESULTS.md, row `cached enrich, second run`). Writes
    // still go through the write-ahead log. The map covers the whole bounded file; SQLite maps
    // no more than its build allows, and nothing where its build does not map at all.
    try db.run("PRAGMA mmap_size = \(max(0, min(maxBytes, 1 << 30)) + (16 << 20))")
    for suffix in ["-wal", "-shm"] { _ = chmod(url.path + suffix, 0o600) }
    return nil
  }

  /// Hands the warnings raised under `lock` to `warn`; called with `lock` released.
  private func deliverHeldWarnings() {
    let warnings = heldWarnings.withLock { held in
      defer { held = [] }
      return held
    }
    for warning in warnings { warn(warning) }
  }

  /// Renames the file (and its `-wal` and `-shm`) to `<name>.corrupt-<timestamp>` and warns
  /// (once `lock`, held here, is released).
  private func moveAside(reason: String) {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
    var aside = url.path + ".corrupt-" + formatter.string(from: Date())
    var counter = 1
    while FileManager.default.fileExists(atPath: aside) {
      counter += 1
      aside = url.path + ".corrupt-" + formatter.string(from: Date()) + "-\(counter)"
    }
    let moved = rename(url.path, aside) == 0
    for suffix in ["-wal", "-shm"] { _ = rename(url.path + suffix, aside + suffix) }
    let warning =
      moved
      ? "cache file \(url.path) was moved aside to \(aside): \(reason); a fresh cache starts"
      : "cache file \(url.path) cannot be used (\(reason)) nor moved aside (errno \(errno))"
    heldWarnings.withLock { $0.append(warning) }
  }
}

/// Creates the file at `path` with mode `0600` (whatever the umask) unless it exists; outside
/// the store, whose `open()` and `close()` would shadow the system calls.
private func createPrivateFile(_ path: String) {
  let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
  guard fd >= 0 else { return }
  _ = fchmod(fd, 0o600)
  _ = close(fd)
}
