import Foundation

/// A column of the file's `entries` table. Its index is both its column in a row read by
/// ``EntriesTable/selectSQL`` (``SQLiteConnection/Row``) and, plus one, its parameter in a row
/// of ``EntriesTable/upsert(rows:)``: the SQL text of both is built from these cases in their
/// order, so a statement's text and the indices it is read and bound with cannot drift apart.
///
/// A bulk run's preload reads the first columns only, up to ``ibge``
/// (``EntriesTable/scanEditionSQL``): the same indices as a full read.
enum EntryColumn: Int32, CaseIterable {
  /// The CEP as a number (unique).
  case cep
  /// 1 for an address, 0 for "does not exist".
  case found
  /// When the entry was last used, in whole seconds since 1970 (to ``PendingUses/granularity``).
  case usedAt
  /// ``Address/logradouro``.
  case logradouro
  /// ``Address/complemento``.
  case complemento
  /// ``Address/bairro``.
  case bairro
  /// ``Address/localidade``.
  case localidade
  /// ``Address/uf``.
  case uf
  /// ``Address/ibge``.
  case ibge
  /// The DNE edition.
  case edition
  /// ``CacheEntryKind``'s raw value.
  case kind
  /// When the entry was stored, in seconds since 1970.
  case storedAt
  /// ``Geo/lat``; `NULL` without `geo`.
  case lat
  /// ``Geo/lon``; `NULL` without `geo`.
  case lon
  /// ``Geo/raioM``; `NULL` without `geo`.
  case raioM
  /// ``Geo/precisao``; `NULL` without `geo`.
  case precisao

  /// Its name in SQL.
  var name: String {
    switch self {
    case .cep: "cep"
    case .found: "found"
    case .usedAt: "used_at"
    case .logradouro: "logradouro"
    case .complemento: "complemento"
    case .bairro: "bairro"
    case .localidade: "localidade"
    case .uf: "uf"
    case .ibge: "ibge"
    case .edition: "edition"
    case .kind: "kind"
    case .storedAt: "stored_at"
    case .lat: "lat"
    case .lon: "lon"
    case .raioM: "raio_m"
    case .precisao: "precisao"
    }
  }

  /// Its type and constraints in `CREATE TABLE`.
  var declaration: String {
    switch self {
    case .cep: "INTEGER NOT NULL UNIQUE"
    case .edition: "TEXT NOT NULL"
    case .kind, .found, .usedAt: "INTEGER NOT NULL"
    case .storedAt: "REAL NOT NULL"
    case .logradouro, .complemento, .bairro, .localidade, .uf, .ibge, .precisao: "TEXT"
    case .lat, .lon: "REAL"
    case .raioM: "INTEGER"
    }
  }

  /// Its parameter in the first row of an upsert (add ``EntriesTable/columnCount`` per row).
  var parameter: Int32 { rawValue + 1 }
}

extension SQLiteConnection.Row {
  func int(_ column: EntryColumn) -> Int64 { int(column.rawValue) }
  func double(_ column: EntryColumn) -> Double { double(column.rawValue) }
  func isNull(_ column: EntryColumn) -> Bool { isNull(column.rawValue) }
  func text(_ column: EntryColumn) -> String { text(column.rawValue) }
  func unsafeText(_ column: EntryColumn) -> UnsafeBufferPointer<UInt8> {
    unsafeText(column.rawValue)
  }
}

/// The statements on the `entries` table, and an entry's row both ways: bound into an upsert,
/// read back from a select. Every column index comes from ``EntryColumn``.
enum EntriesTable {
  /// How many columns a row has (and parameters a row of an upsert).
  static let columnCount = Int32(EntryColumn.allCases.count)

  /// The columns in the order `CREATE TABLE` declares them, after `id` (the file's layout,
  /// unchanged since schema 2; statements name their columns, so it need not follow
  /// ``EntryColumn``'s order).
  static let declarationOrder: [EntryColumn] = [
    .cep, .edition, .kind, .found, .storedAt, .usedAt, .logradouro, .complemento, .bairro,
    .localidade, .uf, .ibge, .lat, .lon, .raioM, .precisao,
  ]

  /// Rows in the order they were stored (`id`, the rowid), found through the unique index on
  /// `cep`.
  static let createSQL =
    "CREATE TABLE entries (id INTEGER PRIMARY KEY, "
    + declarationOrder.map { "\($0.name) \($0.declaration)" }.joined(separator: ", ") + ")"

  /// How many CEPs one read statement looks up.
  static let readBatch = 100

  /// Every column, in ``EntryColumn``'s order: what every read of whole entries selects.
  static let selectSQL = "SELECT \(names(EntryColumn.allCases)) FROM entries"

  /// The entries of ``readBatch`` CEPs at once.
  static let selectManySQL =
    selectSQL + " WHERE cep IN ("
    + Array(repeating: "?", count: readBatch).joined(separator: ", ") + ")"

  /// What a bulk run's preload reads of every entry of one edition: the columns up to
  /// ``EntryColumn/ibge`` (the CEP, whether it exists, its recency, the six text columns; no
  /// `geo`: the batch path's).
  static let scanEditionSQL =
    "SELECT \(names(EntryColumn.allCases.filter { $0.rawValue <= EntryColumn.ibge.rawValue })) "
    + "FROM entries WHERE edition = ?"

  /// The upsert of one entry.
  static let upsertSQL = upsert(rows: 1)

  /// How many entries ``upsertManySQL`` stores in one statement (512 parameters: within
  /// the 999 of SQLite builds before 3.32).
  static let upsertRows = 32

  /// ``upsertSQL`` for ``upsertRows`` entries at once.
  static let upsertManySQL = upsert(rows: upsertRows)

  private static func names(_ columns: [EntryColumn]) -> String {
    columns.map(\.name).joined(separator: ", ")
  }

  /// The upsert of `rows` entries, ``columnCount`` parameters each (``EntryColumn``'s
  /// order), in order. A batch answer never replaces a single answer of the same edition (see
  /// ``CacheEntry/replaces(_:)``).
  private static func upsert(rows: Int) -> String {
    let row = "(" + Array(repeating: "?", count: Int(columnCount)).joined(separator: ", ") + ")"
    let updates = EntryColumn.allCases.filter { $0 != .cep }.map {
      "\($0.name) = excluded.\($0.name)"
    }
    let batch = CacheEntryKind.batch.rawValue
    let single = CacheEntryKind.single.rawValue
    return "INSERT INTO entries(\(names(EntryColumn.allCases))) VALUES "
      + Array(repeating: row, count: rows).joined(separator: ", ")
      + " ON CONFLICT(cep) DO UPDATE SET " + updates.joined(separator: ", ")
      + " WHERE NOT (excluded.kind = \(batch) AND entries.kind = \(single)"
      + " AND entries.edition = excluded.edition)"
  }

  /// Binds `entries[position]` to the parameters of an upsert's row from `base + 1` (`base`:
  /// the row's index times ``columnCount``). Each field is read in place: no copy of the
  /// entry (its address, its edition).
  static func bind(
    _ entries: [CacheEntry], _ position: Int, usedAt: Int64, from base: Int32,
    into bind: inout SQLiteConnection.Binder
  ) {
    bind.int(base + EntryColumn.cep.parameter, Int64(entries[position].cep))
    bind.text(base + EntryColumn.edition.parameter, entries[position].edition)
    bind.int(base + EntryColumn.kind.parameter, Int64(entries[position].kind.rawValue))
    bind.double(
      base + EntryColumn.storedAt.parameter, entries[position].storedAt.timeIntervalSince1970)
    bind.int(base + EntryColumn.usedAt.parameter, usedAt)
    guard let address = entries[position].address else {
      bind.int(base + EntryColumn.found.parameter, 0)
      bind.null(base + EntryColumn.logradouro.parameter)
      bind.null(base + EntryColumn.complemento.parameter)
      bind.null(base + EntryColumn.bairro.parameter)
      bind.null(base + EntryColumn.localidade.parameter)
      bind.null(base + EntryColumn.uf.parameter)
      bind.null(base + EntryColumn.ibge.parameter)
      bindNoGeo(from: base, into: &bind)
      return
    }
    bind.int(base + EntryColumn.found.parameter, 1)
    // Bound from the address's bytes: a batch row's fields never become Strings.
    bind.field(base + EntryColumn.logradouro.parameter, address, .logradouro)
    bind.field(base + EntryColumn.complemento.parameter, address, .complemento)
    bind.field(base + EntryColumn.bairro.parameter, address, .bairro)
    bind.field(base + EntryColumn.localidade.parameter, address, .localidade)
    bind.field(base + EntryColumn.uf.parameter, address, .uf)
    bind.field(base + EntryColumn.ibge.parameter, address, .ibge)
    guard let geo = address.geo else { return bindNoGeo(from: base, into: &bind) }
    bind.double(base + EntryColumn.lat.parameter, geo.lat)
    bind.double(base + EntryColumn.lon.parameter, geo.lon)
    bind.int(base + EntryColumn.raioM.parameter, Int64(geo.raioM))
    bind.text(base + EntryColumn.precisao.parameter, geo.precisao)
  }

  private static func bindNoGeo(from base: Int32, into bind: inout SQLiteConnection.Binder) {
    bind.null(base + EntryColumn.lat.parameter)
    bind.null(base + EntryColumn.lon.parameter)
    bind.null(base + EntryColumn.raioM.parameter)
    bind.null(base + EntryColumn.precisao.parameter)
  }

  /// The entry of a row of ``selectSQL``.
  static func entry(_ row: SQLiteConnection.Row) -> CacheEntry {
    let cep = Int(row.int(.cep))
    var address: Address?
    if row.int(.found) != 0 {
      var geo: Geo?
      if !row.isNull(.lat), !row.isNull(.lon) {
        geo = Geo(
          lat: row.double(.lat), lon: row.double(.lon), raioM: Int(row.int(.raioM)),
          precisao: row.text(.precisao))
      }
      address = (geo == nil ? packedAddress(cep: cep, row) : nil) ?? stringAddress(cep, row, geo)
    }
    return CacheEntry(
      cep: cep, address: address, edition: row.text(.edition),
      storedAt: Date(timeIntervalSince1970: row.double(.storedAt)),
      kind: CacheEntryKind(rawValue: Int(row.int(.kind))) ?? .batch)
  }

  /// The answer of a row of ``scanEditionSQL`` (or ``selectSQL``) as the batch path serves
  /// it: an address without `geo`, or `nil` for "does not exist".
  static func batchAddress(_ row: SQLiteConnection.Row, cep: Int) -> Address? {
    guard row.int(.found) != 0 else { return nil }
    return packedAddress(cep: cep, row) ?? stringAddress(cep, row, nil)
  }

  /// An address of `String`s from the six text columns, and `geo`; bytes that are not UTF-8
  /// (a file written by something else) are repaired as `String` repairs them.
  private static func stringAddress(_ cep: Int, _ row: SQLiteConnection.Row, _ geo: Geo?)
    -> Address
  {
    Address(
      cep: cepDigits(cep), logradouro: row.text(.logradouro),
      complemento: row.text(.complemento), bairro: row.text(.bairro),
      localidade: row.text(.localidade), uf: row.text(.uf), ibge: row.text(.ibge), geo: geo)
  }

  /// An address without `geo` read as the batch endpoint's are: the six text columns packed in
  /// one allocation, no `String` made, each column's bytes asked of SQLite once; `nil` when a
  /// column is not valid UTF-8.
  private static func packedAddress(cep: Int, _ row: SQLiteConnection.Row) -> Address? {
    // SQLite's buffers stay valid until the statement steps: every column is read before.
    let texts = (
      row.unsafeText(.logradouro), row.unsafeText(.complemento), row.unsafeText(.bairro),
      row.unsafeText(.localidade), row.unsafeText(.uf), row.unsafeText(.ibge)
    )
    let total =
      texts.0.count + texts.1.count + texts.2.count + texts.3.count + texts.4.count
      + texts.5.count
    guard
      isValidUTF8(texts.0), isValidUTF8(texts.1), isValidUTF8(texts.2), isValidUTF8(texts.3),
      isValidUTF8(texts.4), isValidUTF8(texts.5)
    else { return nil }
    let packed = PackedFields.single(textBytes: total) { writer in
      // Six calls, not a loop over an array of them: no allocation per row.
      func field(_ text: UnsafeBufferPointer<UInt8>) {
        writer.append(text)
        writer.endField()
      }
      field(texts.0)
      field(texts.1)
      field(texts.2)
      field(texts.3)
      field(texts.4)
      field(texts.5)
    }
    return Address(cepNumber: cep, packed: packed)
  }
}

/// The 8-digit text of a CEP number.
func cepDigits(_ cep: Int) -> String {
  let text = String(cep)
  return text.count >= 8 ? text : String(repeating: "0", count: 8 - text.count) + text
}
