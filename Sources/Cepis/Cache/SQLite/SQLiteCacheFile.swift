import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The cache's file on disk, apart from what is read and written in it: creating the folder
/// and the file private, opening a connection, creating the schema in an empty file, checking
/// that a file is ours and of this schema, setting the connection up, and deciding when a file
/// is to be moved aside (and moving it).
///
/// A file that is damaged, not a database, not ours, or of another schema (`PRAGMA
/// user_version` other than ``schemaVersion``; schema 1, keyed by CEP, included) is renamed
/// `<name>.corrupt-<UTC timestamp>` (its `-wal` and `-shm` beside it) and a fresh one starts,
/// with one warning.
struct SQLiteCacheFile: Sendable {
  /// The schema this code writes and reads.
  static let schemaVersion: Int64 = 2
  /// The `meta` row that tells our files from other SQLite databases.
  static let schemaMarker = "cepis-address-cache"
  /// Busy waiting per statement, in milliseconds.
  static let busyTimeout: Int32 = 5_000

  /// The statements that create schema ``schemaVersion`` in an empty file.
  static let schemaSQL = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    EntriesTable.createSQL,
    "INSERT INTO meta (key, value) VALUES ('schema', '\(schemaMarker)')",
    "PRAGMA user_version = \(schemaVersion)",
  ]

  /// The database file.
  let url: URL
  /// The size bound, in bytes (the memory map covers it).
  let maxBytes: Int
  let library: SQLiteLibrary

  /// Whether `error` means the file is to be moved aside: it is damaged, or not a database.
  static func isUnusable(_ error: any Error) -> Bool {
    (error as? SQLiteError)?.meansUnusableFile ?? false
  }

  /// Opens a connection to a file of this schema: the file as found, or a fresh one after
  /// moving aside one that cannot be used (each move's warning appended to `warnings`).
  func open(warnings: inout [String]) throws -> SQLiteConnection {
    for attempt in 0..<2 {
      let db = try connect()
      do {
        if let problem = try prepare(db) {
          db.close()
          guard attempt == 0 else { throw SQLiteError(code: SQLiteCode.error, message: problem) }
          warnings.append(moveAside(reason: problem))
          continue
        }
        return db
      } catch let error as SQLiteError where error.meansUnusableFile && attempt == 0 {
        db.close()
        warnings.append(moveAside(reason: "it is damaged (\(error.message))"))
      }
    }
    throw SQLiteError(code: SQLiteCode.error, message: "cannot start a fresh cache file")
  }

  /// Creates the folder (0700) and the file (0600) when missing, and opens a connection.
  private func connect() throws -> SQLiteConnection {
    try Self.createFolder(url.deletingLastPathComponent())
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
    var (version, tables) = try db.transaction { () -> (Int64, Int64) in
      let version = try db.integer("PRAGMA user_version")
      guard version == 0 else { return (version, 0) }
      return (version, try db.integer("SELECT count(*) FROM sqlite_master"))
    }
    if version > Self.schemaVersion {
      return
        "its schema (version \(version)) is newer than this Cepis reads (\(Self.schemaVersion))"
    }
    if version == 0 {
      guard tables == 0 else { return "it is not a Cepis cache" }
      // Only effective before the first table exists: lets the file shrink after evictions.
      try db.run("PRAGMA auto_vacuum = INCREMENTAL")
      try Self.switchToWAL(db)
      try db.writeTransaction {
        // Another process may have created it meanwhile.
        version = try db.integer("PRAGMA user_version")
        tables = try db.integer("SELECT count(*) FROM sqlite_master")
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
    try configure(db)
    return nil
  }

  /// `PRAGMA journal_mode = WAL`, tried again for up to two seconds while the file is busy:
  /// the switch needs a moment of exclusive access that SQLite's busy timeout does not wait
  /// for, and several processes may open the file at once.
  private static func switchToWAL(_ db: SQLiteConnection) throws {
    var attempt = 0
    while true {
      do {
        try db.run("PRAGMA journal_mode = WAL")
        return
      } catch let error as SQLiteError
        where (error.code == SQLiteCode.busy || error.code == SQLiteCode.locked) && attempt < 100
      {
        attempt += 1
        usleep(20_000)
      }
    }
  }

  /// Sets up a connection to a file of this schema.
  private func configure(_ db: SQLiteConnection) throws {
    try Self.switchToWAL(db)
    // A committed transaction survives the process being killed (`kill -9`); only a power
    // loss may take back the last ones, which a cache can afford.
    try db.run("PRAGMA synchronous = NORMAL")
    try db.run("PRAGMA journal_size_limit = 4194304")
    // A statement that writes several rows (``EntriesTable/upsertManySQL``) keeps a statement
    // journal, to undo itself alone if it fails halfway; past a small size SQLite spills it
    // to a temporary file (a first `cepis enrich` wrote its journals there and threw them away, and
    // every write needed a writable temporary folder; `5762576`). In memory, it is a few
    // pages, freed with each statement.
    try db.run("PRAGMA temp_store = MEMORY")
    // A chunk's answers land on pages all over the file: a page cache four times SQLite's
    // default keeps the upper levels and recent pages from being read again, and checkpoints
    // four times further apart than the default copy a page rewritten by several chunks back
    // once (RESULTS.md, row `cached enrich, first run`).
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
  }

  /// Renames the file (and its `-wal` and `-shm`) to `<name>.corrupt-<timestamp>`; returns the
  /// warning to issue (with no lock of the cache held: see ``CacheWarnings``).
  func moveAside(reason: String) -> String {
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
    return moved
      ? "cache file \(url.path) was moved aside to \(aside): \(reason); a fresh cache starts"
      : "cache file \(url.path) cannot be used (\(reason)) nor moved aside (errno \(errno))"
  }
}

/// Creates the file at `path` with mode `0600` (whatever the umask) unless it exists; outside
/// any type, so that no `open()` or `close()` of one shadows the system calls.
private func createPrivateFile(_ path: String) {
  let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
  guard fd >= 0 else { return }
  _ = fchmod(fd, 0o600)
  _ = close(fd)
}
