import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The system SQLite, loaded at run time.
///
/// Nothing in building Cepis may need `sqlite3.h`: the official Swift images for Linux carry
/// only the runtime library (SwiftPM itself links it), not `libsqlite3-dev`. So the library is
/// opened with `dlopen` and each function found with `dlsym`, on every platform — on Apple
/// platforms `/usr/lib/libsqlite3.dylib` is always there, and one code path is one to test.
/// When no library can be loaded, ``shared`` is `nil` and the file cache works in memory.
struct SQLiteLibrary: Sendable {
  typealias Open =
    @convention(c) (
      UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?, Int32, UnsafePointer<CChar>?
    ) -> Int32
  typealias Close = @convention(c) (OpaquePointer?) -> Int32
  typealias Prepare =
    @convention(c) (
      OpaquePointer?, UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<OpaquePointer?>?,
      UnsafeMutablePointer<UnsafePointer<CChar>?>?
    ) -> Int32
  typealias StatementCall = @convention(c) (OpaquePointer?) -> Int32
  typealias BindInt64 = @convention(c) (OpaquePointer?, Int32, Int64) -> Int32
  typealias BindDouble = @convention(c) (OpaquePointer?, Int32, Double) -> Int32
  /// `sqlite3_bind_text`: the destructor is declared as an `Int` so that `SQLITE_TRANSIENT`
  /// (`(void *)-1`) can be passed; a pointer and an `intptr_t` travel alike in every ABI Swift
  /// runs on.
  typealias BindText =
    @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, Int32, Int) -> Int32
  typealias BindNull = @convention(c) (OpaquePointer?, Int32) -> Int32
  typealias ColumnInt64 = @convention(c) (OpaquePointer?, Int32) -> Int64
  typealias ColumnDouble = @convention(c) (OpaquePointer?, Int32) -> Double
  typealias ColumnText = @convention(c) (OpaquePointer?, Int32) -> UnsafePointer<UInt8>?
  typealias ColumnInt32 = @convention(c) (OpaquePointer?, Int32) -> Int32
  typealias ErrorMessage = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
  typealias BusyTimeout = @convention(c) (OpaquePointer?, Int32) -> Int32
  typealias Changes = @convention(c) (OpaquePointer?) -> Int32

  let open: Open
  let close: Close
  let prepare: Prepare
  let step: StatementCall
  let reset: StatementCall
  let finalize: StatementCall
  let clearBindings: StatementCall
  let bindInt64: BindInt64
  let bindDouble: BindDouble
  let bindText: BindText
  let bindNull: BindNull
  let columnInt64: ColumnInt64
  let columnDouble: ColumnDouble
  let columnText: ColumnText
  let columnBytes: ColumnInt32
  let columnType: ColumnInt32
  let errorMessage: ErrorMessage
  let busyTimeout: BusyTimeout
  let changes: Changes
  let extendedErrorCodes: @convention(c) (OpaquePointer?, Int32) -> Int32

  /// The library of this process, or `nil` (with ``loadFailure``) when none could be loaded.
  static let shared: SQLiteLibrary? = load().library

  /// Why ``shared`` is `nil`.
  static let loadFailure: String? = load().failure

  /// The names tried in order.
  static let candidates: [String] = {
    #if canImport(Darwin)
      return ["/usr/lib/libsqlite3.dylib", "libsqlite3.dylib"]
    #else
      return ["libsqlite3.so.0", "libsqlite3.so"]
    #endif
  }()

  private static let loaded: (library: SQLiteLibrary?, failure: String?) = {
    for name in candidates {
      guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else { continue }
      if let library = SQLiteLibrary(handle: handle) { return (library, nil) }
      dlclose(handle)
    }
    return (nil, "no usable SQLite library (tried \(candidates.joined(separator: ", ")))")
  }()

  private static func load() -> (library: SQLiteLibrary?, failure: String?) { loaded }

  /// Finds every function in `handle`; `nil` when one is missing.
  private init?(handle: UnsafeMutableRawPointer) {
    func symbol<F>(_ name: String, _: F.Type) -> F? {
      guard let address = dlsym(handle, name) else { return nil }
      return unsafeBitCast(address, to: F.self)
    }
    guard let open = symbol("sqlite3_open_v2", Open.self),
      let close = symbol("sqlite3_close_v2", Close.self),
      let prepare = symbol("sqlite3_prepare_v2", Prepare.self),
      let step = symbol("sqlite3_step", StatementCall.self),
      let reset = symbol("sqlite3_reset", StatementCall.self),
      let finalize = symbol("sqlite3_finalize", StatementCall.self),
      let clearBindings = symbol("sqlite3_clear_bindings", StatementCall.self),
      let bindInt64 = symbol("sqlite3_bind_int64", BindInt64.self),
      let bindDouble = symbol("sqlite3_bind_double", BindDouble.self),
      let bindText = symbol("sqlite3_bind_text", BindText.self),
      let bindNull = symbol("sqlite3_bind_null", BindNull.self),
      let columnInt64 = symbol("sqlite3_column_int64", ColumnInt64.self),
      let columnDouble = symbol("sqlite3_column_double", ColumnDouble.self),
      let columnText = symbol("sqlite3_column_text", ColumnText.self),
      let columnBytes = symbol("sqlite3_column_bytes", ColumnInt32.self),
      let columnType = symbol("sqlite3_column_type", ColumnInt32.self),
      let errorMessage = symbol("sqlite3_errmsg", ErrorMessage.self),
      let busyTimeout = symbol("sqlite3_busy_timeout", BusyTimeout.self),
      let changes = symbol("sqlite3_changes", Changes.self),
      let extendedErrorCodes = symbol(
        "sqlite3_extended_result_codes", (@convention(c) (OpaquePointer?, Int32) -> Int32).self)
    else { return nil }
    self.open = open
    self.close = close
    self.prepare = prepare
    self.step = step
    self.reset = reset
    self.finalize = finalize
    self.clearBindings = clearBindings
    self.bindInt64 = bindInt64
    self.bindDouble = bindDouble
    self.bindText = bindText
    self.bindNull = bindNull
    self.columnInt64 = columnInt64
    self.columnDouble = columnDouble
    self.columnText = columnText
    self.columnBytes = columnBytes
    self.columnType = columnType
    self.errorMessage = errorMessage
    self.busyTimeout = busyTimeout
    self.changes = changes
    self.extendedErrorCodes = extendedErrorCodes
  }
}

/// The result codes used here (primary codes; extended codes are masked to these).
enum SQLiteCode {
  static let ok: Int32 = 0
  static let error: Int32 = 1
  static let busy: Int32 = 5
  static let locked: Int32 = 6
  static let corrupt: Int32 = 11
  static let notADatabase: Int32 = 26
  static let row: Int32 = 100
  static let done: Int32 = 101
  static let null: Int32 = 5
}

/// A failure of SQLite, with its primary result code.
struct SQLiteError: Error, CustomStringConvertible {
  /// The primary result code (`SQLITE_BUSY`, `SQLITE_CORRUPT`, …).
  var code: Int32
  /// What SQLite said, and during which statement.
  var message: String

  var description: String { "SQLite error \(code): \(message)" }

  /// Whether the file is damaged or is not a database: the cure is a fresh file.
  var meansUnusableFile: Bool {
    code == SQLiteCode.corrupt || code == SQLiteCode.notADatabase
  }
}
