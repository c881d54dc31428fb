import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// One open connection; not shareable (the store guards it with its lock).
final class SQLiteConnection {
  let library: SQLiteLibrary
  private var handle: OpaquePointer?
  private var statements: [String: OpaquePointer] = [:]
  /// The statement used last, and its text.
  private var recent: (sql: String, statement: OpaquePointer)?

  /// Opens (creating if needed) the database at `path`, with extended result codes and
  /// `busyTimeout` milliseconds of busy waiting.
  init(library: SQLiteLibrary, path: String, busyTimeout: Int32) throws {
    self.library = library
    var db: OpaquePointer?
    // READWRITE | CREATE | NOMUTEX: the store serializes every access itself.
    let flags: Int32 = 0x0000_0002 | 0x0000_0004 | 0x0000_8000
    let status = library.open(path, &db, flags, nil)
    handle = db
    guard status == SQLiteCode.ok, db != nil else {
      let message =
        db.flatMap { library.errorMessage($0) }.map { String(cString: $0) } ?? "cannot open"
      _ = library.close(db)
      handle = nil
      throw SQLiteError(code: status & 0xFF, message: message)
    }
    _ = library.extendedErrorCodes(db, 1)
    _ = library.busyTimeout(db, busyTimeout)
  }

  deinit {
    close()
    scratch.deallocate()
  }

  /// Finalizes every statement and closes the connection. Idempotent.
  func close() {
    for statement in statements.values { _ = library.finalize(statement) }
    statements.removeAll()
    recent = nil
    if let handle { _ = library.close(handle) }
    handle = nil
  }

  private func failure(_ status: Int32, _ sql: String) -> SQLiteError {
    let text = handle.flatMap { library.errorMessage($0) }.map { String(cString: $0) } ?? ""
    return SQLiteError(code: status & 0xFF, message: "\(text) (in \(sql.prefix(60)))")
  }

  /// The prepared statement for `sql`, cached for the life of the connection.
  private func statement(_ sql: String) throws -> OpaquePointer {
    // A statement run row after row (a chunk's upserts) is found without hashing its text:
    // the same `static let` string compares equal at once.
    if let recent, recent.sql == sql { return recent.statement }
    if let cached = statements[sql] {
      recent = (sql, cached)
      return cached
    }
    var statement: OpaquePointer?
    let status = library.prepare(handle, sql, -1, &statement, nil)
    guard status == SQLiteCode.ok, let statement else { throw failure(status, sql) }
    statements[sql] = statement
    return statement
  }

  /// A value bound to a statement's parameter.
  enum Value {
    case int(Int64)
    case double(Double)
    case text(String)
    case null
  }

  /// One result row, read while the statement is positioned on it.
  struct Row {
    fileprivate let library: SQLiteLibrary
    fileprivate let statement: OpaquePointer

    func int(_ column: Int32) -> Int64 { library.columnInt64(statement, column) }
    func double(_ column: Int32) -> Double { library.columnDouble(statement, column) }
    func isNull(_ column: Int32) -> Bool {
      library.columnType(statement, column) == SQLiteCode.null
    }
    func text(_ column: Int32) -> String {
      String(decoding: unsafeText(column), as: UTF8.self)
    }
    /// The bytes of a text column, in SQLite's buffer: valid until the statement steps or is
    /// reset, and until the same column is read as another type. Empty for `NULL`. Not
    /// checked to be UTF-8.
    func unsafeText(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
      // sqlite3_column_text before sqlite3_column_bytes, as SQLite asks.
      guard let bytes = library.columnText(statement, column) else {
        return UnsafeBufferPointer(start: nil, count: 0)
      }
      return UnsafeBufferPointer(start: bytes, count: Int(library.columnBytes(statement, column)))
    }
  }

  /// Runs `sql` with `values`, calling `row` for each result row.
  func run(_ sql: String, _ values: [Value] = [], row: ((Row) throws -> Void)? = nil) throws {
    let statement = try statement(sql)
    defer {
      _ = library.reset(statement)
      _ = library.clearBindings(statement)
    }
    for (offset, value) in values.enumerated() {
      let index = Int32(offset + 1)
      let status: Int32
      switch value {
      case .int(let number): status = library.bindInt64(statement, index, number)
      case .double(let number): status = library.bindDouble(statement, index, number)
      case .text(let text): status = library.bindText(statement, index, text, -1, -1)
      case .null: status = library.bindNull(statement, index)
      }
      guard status == SQLiteCode.ok else { throw failure(status, sql) }
    }
    while true {
      let status = library.step(statement)
      switch status & 0xFF {
      case SQLiteCode.row:
        try row?(Row(library: library, statement: statement))
      case SQLiteCode.done:
        return
      default:
        throw failure(status, sql)
      }
    }
  }

  /// Runs `sql` once, its parameters bound by `bind` through a ``Binder``, to its end (a
  /// write: no result rows are read). For a statement
  /// run row after row (a chunk's upserts): no array of values is built, and text is copied
  /// into the connection's own buffer and bound in place (`SQLITE_STATIC`), not copied again
  /// by SQLite into memory of its own. `bind` must bind every parameter: bindings are not
  /// cleared between runs.
  func runBound(_ sql: String, _ bind: (inout Binder) throws -> Void) throws {
    let statement = try statement(sql)
    defer { _ = library.reset(statement) }
    var binder = Binder(library: library, statement: statement, scratch: scratch)
    try bind(&binder)
    if let status = binder.failure { throw failure(status, sql) }
    let status = library.step(statement)
    guard status & 0xFF == SQLiteCode.done else { throw failure(status, sql) }
  }

  /// Where ``runBound(_:_:)`` copies a row's text: valid until the statement is reset, which
  /// comes before the next row's copy.
  private let scratch = UnsafeMutableRawPointer.allocate(
    byteCount: Binder.scratchBytes, alignment: 1)

  /// Binds one run's parameters (see ``SQLiteConnection/runBound(_:_:)``); the first
  /// failure is kept, and the statement is not run.
  struct Binder {
    /// The text one row can bind in place; beyond it, SQLite copies the rest (never
    /// reached by an address, whose fields are a few hundred bytes).
    static let scratchBytes = 16_384

    fileprivate let library: SQLiteLibrary
    fileprivate let statement: OpaquePointer
    fileprivate let scratch: UnsafeMutableRawPointer
    fileprivate var used = 0
    fileprivate var failure: Int32?

    fileprivate init(
      library: SQLiteLibrary, statement: OpaquePointer, scratch: UnsafeMutableRawPointer
    ) {
      self.library = library
      self.statement = statement
      self.scratch = scratch
    }

    private mutating func check(_ status: Int32) {
      if status != SQLiteCode.ok && failure == nil { failure = status }
    }

    mutating func int(_ index: Int32, _ value: Int64) {
      check(library.bindInt64(statement, index, value))
    }

    mutating func double(_ index: Int32, _ value: Double) {
      check(library.bindDouble(statement, index, value))
    }

    mutating func null(_ index: Int32) { check(library.bindNull(statement, index)) }

    /// Binds `bytes` as text (an empty buffer as "", never as `NULL`).
    mutating func text(_ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
      let count = bytes.count
      guard let source = bytes.baseAddress, count > 0 else {
        // A null pointer would bind NULL: an empty field is "", pointed into the scratch.
        return check(
          library.bindText(statement, index, scratch.assumingMemoryBound(to: CChar.self), 0, 0))
      }
      guard used + count <= Self.scratchBytes else {
        // SQLITE_TRANSIENT: SQLite takes a copy of its own.
        return check(
          source.withMemoryRebound(to: CChar.self, capacity: count) {
            library.bindText(statement, index, $0, Int32(count), -1)
          })
      }
      let target = scratch + used
      target.copyMemory(from: source, byteCount: count)
      used += count
      // SQLITE_STATIC (0): the bytes stay in the scratch buffer until the statement's reset.
      check(
        library.bindText(
          statement, index, target.assumingMemoryBound(to: CChar.self), Int32(count), 0))
    }

    /// Binds a string's UTF-8 bytes as text.
    mutating func text(_ index: Int32, _ string: String) {
      var string = string
      string.withUTF8 { text(index, $0) }
    }

    /// Binds one text field of `address` from its bytes: no `String` is made of a batch row's
    /// field.
    mutating func field(_ index: Int32, _ address: Address, _ field: AddressTextField) {
      address.withUTF8(field) { text(index, $0) }
    }
  }

  /// The first column of the first row of `sql`, as an integer (0 when there is no row).
  func integer(_ sql: String, _ values: [Value] = []) throws -> Int64 {
    var result: Int64 = 0
    var seen = false
    try run(sql, values) { row in
      if !seen { result = row.int(0) }
      seen = true
    }
    return result
  }

  /// The first column of the first row of `sql`, as text (`nil` when there is no row).
  func text(_ sql: String, _ values: [Value] = []) throws -> String? {
    var result: String?
    try run(sql, values) { row in
      if result == nil { result = row.text(0) }
    }
    return result
  }

  /// Rows changed by the last statement.
  var changes: Int { Int(library.changes(handle)) }
}

extension SQLiteConnection {
  /// Runs `body` in a transaction begun with `BEGIN` (a read's one snapshot), committed when
  /// `body` returns and rolled back when it throws.
  func transaction<T>(_ body: () throws -> T) throws -> T {
    try run("BEGIN")
    do {
      let result = try body()
      try run("COMMIT")
      return result
    } catch {
      try? run("ROLLBACK")
      throw error
    }
  }

  /// Runs `body` in a transaction begun with `BEGIN IMMEDIATE` (so that it never has to
  /// upgrade a read lock, the one case a busy timeout cannot resolve), retried while another
  /// process holds the write lock beyond the busy timeout; committed when `body` returns and
  /// rolled back when it throws.
  func writeTransaction(_ body: () throws -> Void) throws {
    var attempt = 0
    while true {
      do {
        try run("BEGIN IMMEDIATE")
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
      try run("COMMIT")
    } catch {
      try? run("ROLLBACK")
      throw error
    }
  }
}
