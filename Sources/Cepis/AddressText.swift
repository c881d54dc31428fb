// How an `Address` holds its seven text fields.
//
// A single lookup or a fallback builds its strings once, and they are kept as they are. A row
// of a batch answer is kept as one buffer instead: its six fields, unescaped, copied from the
// response in one allocation, with the CEP as a number, so that a million-row batch costs one
// allocation per row rather than a `String` per field (the profile of `lookupMany` spent most
// of its time there). A field becomes a `String` when it is read.

/// The text of an ``Address``: strings, or one packed batch row.
enum AddressText: Sendable {
  /// Seven strings, shared (copy on write) between copies of the address.
  case strings(AddressStrings)
  /// A batch row: the CEP as its number, the other fields in one buffer.
  case packed(cep: UInt32, fields: PackedFields)

  /// Which of the six packed fields (the CEP is the number).
  typealias Field = AddressTextField

  var cep: String {
    switch self {
    case .strings(let strings): return strings.cep
    case .packed(let number, _): return cepString(Int(number))
    }
  }

  subscript(field: Field) -> String {
    switch self {
    case .strings(let strings): return strings[field]
    case .packed(_, let fields): return fields[field]
    }
  }

  /// The coordinates: a batch row never has them.
  var geo: Geo? {
    switch self {
    case .strings(let strings): return strings.geo
    case .packed: return nil
    }
  }

  /// The edition of an answer kept from an older one: a batch row is always current.
  var staleEdition: String? {
    switch self {
    case .strings(let strings): return strings.staleEdition
    case .packed: return nil
    }
  }

  /// The same text as strings, for a change to one field.
  var unpacked: AddressStrings {
    switch self {
    case .strings(let strings): return strings
    case .packed:
      return AddressStrings(
        cep: cep, logradouro: self[.logradouro], complemento: self[.complemento],
        bairro: self[.bairro], localidade: self[.localidade], uf: self[.uf], ibge: self[.ibge],
        geo: nil, staleEdition: nil)
    }
  }

  /// Whether two texts are equal field by field; the same packed row without reading it.
  static func == (lhs: AddressText, rhs: AddressText) -> Bool {
    if case .strings(let left) = lhs, case .strings(let right) = rhs, left === right {
      return true
    }
    if case .packed(let left, let leftFields) = lhs, case .packed(let right, let rightFields) = rhs,
      left == right, leftFields === rightFields
    {
      return true
    }
    guard lhs.cep == rhs.cep, lhs.geo == rhs.geo, lhs.staleEdition == rhs.staleEdition else {
      return false
    }
    return Field.allCases.allSatisfy { lhs[$0] == rhs[$0] }
  }
}

/// The six text fields of an ``Address`` after its CEP, in the API's column order.
package enum AddressTextField: Int, CaseIterable, Sendable {
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
}

/// The seven strings of an address, its coordinates and its stale edition, immutable: a change
/// makes a new box. (The last two live here, not in `Address`, so that an address is three
/// words wide.)
final class AddressStrings: Sendable {
  let cep: String
  let logradouro: String
  let complemento: String
  let bairro: String
  let localidade: String
  let uf: String
  let ibge: String
  let geo: Geo?
  let staleEdition: String?

  init(
    cep: String, logradouro: String, complemento: String, bairro: String, localidade: String,
    uf: String, ibge: String, geo: Geo?, staleEdition: String?
  ) {
    self.cep = cep
    self.logradouro = logradouro
    self.complemento = complemento
    self.bairro = bairro
    self.localidade = localidade
    self.uf = uf
    self.ibge = ibge
    self.geo = geo
    self.staleEdition = staleEdition
  }

  subscript(field: AddressText.Field) -> String {
    switch field {
    case .logradouro: return logradouro
    case .complemento: return complemento
    case .bairro: return bairro
    case .localidade: return localidade
    case .uf: return uf
    case .ibge: return ibge
    }
  }

  /// A copy with other coordinates.
  func replacing(geo: Geo?) -> AddressStrings {
    AddressStrings(
      cep: cep, logradouro: logradouro, complemento: complemento, bairro: bairro,
      localidade: localidade, uf: uf, ibge: ibge, geo: geo, staleEdition: staleEdition)
  }

  /// A copy with another stale edition.
  func replacing(staleEdition: String?) -> AddressStrings {
    AddressStrings(
      cep: cep, logradouro: logradouro, complemento: complemento, bairro: bairro,
      localidade: localidade, uf: uf, ibge: ibge, geo: geo, staleEdition: staleEdition)
  }

  /// A copy with one field replaced (`nil`: the CEP).
  func replacing(_ field: AddressText.Field?, with value: String) -> AddressStrings {
    AddressStrings(
      cep: field == nil ? value : cep,
      logradouro: field == .logradouro ? value : logradouro,
      complemento: field == .complemento ? value : complemento,
      bairro: field == .bairro ? value : bairro,
      localidade: field == .localidade ? value : localidade,
      uf: field == .uf ? value : uf,
      ibge: field == .ibge ? value : ibge, geo: geo, staleEdition: staleEdition)
  }
}

/// The end offset of each of the six packed fields in the buffer.
struct PackedEnds {
  var ends: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0)

  subscript(index: Int) -> UInt32 {
    get {
      switch index {
      case 0: return ends.0
      case 1: return ends.1
      case 2: return ends.2
      case 3: return ends.3
      case 4: return ends.4
      default: return ends.5
      }
    }
    set {
      switch index {
      case 0: ends.0 = newValue
      case 1: ends.1 = newValue
      case 2: ends.2 = newValue
      case 3: ends.3 = newValue
      case 4: ends.4 = newValue
      default: ends.5 = newValue
      }
    }
  }
}

/// The six fields of one row of a *packed chunk*: one allocation (`ManagedBuffer`'s tail)
/// that holds the rows of a whole batch answer, their fields back to back as valid UTF-8, and
/// where each field ends. A chunk of 500 rows costs one allocation, not 500; every address
/// read from it holds the chunk (one reference) and its row's number.
///
/// The tail is the *ends table* (six `UInt32` per row: the end of each field, counted from the
/// start of the text, so that a field starts where the one before it ends, across rows) and
/// then the text. A chunk is written once, by ``PackedChunkWriter`` or ``make(byteCount:_:)``,
/// before anyone else can see it, and never again; only reads follow, so sharing it between
/// threads is safe: that is the `@unchecked Sendable` (`ManagedBuffer` itself is never
/// `Sendable`).
///
/// An address holds its whole chunk, as a `Substring` holds its `String`: a run's memo
/// re-packs the answers it keeps for long on their own (see `LookupMemo`), so that its few
/// long-lived answers do not hold every chunk they came in.
struct PackedFields: @unchecked Sendable {
  /// A chunk: the tail holds the ends table for `rowCapacity` rows, then the text.
  final class Storage: ManagedBuffer<PackedChunkHeader, UInt8> {}

  private let storage: Storage
  /// The row's number in its chunk.
  private let row: UInt32

  fileprivate init(storage: Storage, row: UInt32) {
    self.storage = storage
    self.row = row
  }

  /// A chunk of one row: a buffer of `byteCount` bytes that `fill` writes, returning each
  /// field's end offset. `fill` must write valid UTF-8 into every byte up to the last end.
  static func make(
    byteCount: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> PackedEnds
  ) -> PackedFields {
    let storage = PackedChunkHeader.allocate(rows: 1, textBytes: byteCount)
    storage.withUnsafeMutablePointers { header, tail in
      let ends = fill(tail + header.pointee.textOffset)
      for field in 0..<6 {
        precondition(Int(ends[field]) <= byteCount, "a packed field past its buffer")
        UnsafeMutableRawPointer(tail).storeBytes(
          of: ends[field], toByteOffset: field * 4, as: UInt32.self)
      }
    }
    return PackedFields(storage: storage, row: 0)
  }

  /// Whether both name the same row of the same chunk.
  static func === (lhs: PackedFields, rhs: PackedFields) -> Bool {
    lhs.storage === rhs.storage && lhs.row == rhs.row
  }

  /// The same fields in a chunk of their own (one allocation the size of the row): what a
  /// long-lived holder keeps, so as not to hold the rest of the chunk.
  var repacked: PackedFields {
    var lengths = PackedEnds()
    var total = 0
    for field in AddressText.Field.allCases {
      total += withUTF8(field) { $0.count }
      lengths[field.rawValue] = UInt32(total)
    }
    return PackedFields.make(byteCount: total) { out in
      for field in AddressText.Field.allCases {
        withUTF8(field) { bytes in
          let start = field.rawValue == 0 ? 0 : Int(lengths[field.rawValue - 1])
          if let base = bytes.baseAddress {
            (out + start).initialize(from: base, count: bytes.count)
          }
        }
      }
      return lengths
    }
  }

  /// Which chunk the row is in (for tests).
  var chunkIdentity: ObjectIdentifier { ObjectIdentifier(storage) }

  /// Whether this row's chunk holds other rows (a row of a batch answer's chunk).
  var sharesItsChunk: Bool { storage.header.rowCapacity > 1 }

  /// Calls `body` with the UTF-8 bytes of `field`, in place.
  func withUTF8<R>(_ field: AddressText.Field, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    let row = Int(self.row)
    return storage.withUnsafeMutablePointers { header, tail in
      let index = row * 6 + field.rawValue
      let raw = UnsafeRawPointer(tail)
      let start =
        index == 0 ? 0 : Int(raw.loadUnaligned(fromByteOffset: (index - 1) * 4, as: UInt32.self))
      let end = Int(raw.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
      return body(
        UnsafeBufferPointer(start: tail + header.pointee.textOffset + start, count: end - start))
    }
  }

  subscript(field: AddressText.Field) -> String {
    // Validated when the row was packed: decoding copies, it never repairs.
    withUTF8(field) { String(decoding: $0, as: UTF8.self) }
  }
}

/// The header of a packed chunk (see ``PackedFields``).
struct PackedChunkHeader {
  /// How many rows the ends table has room for.
  let rowCapacity: Int
  /// How many bytes of text the chunk has room for.
  let textCapacity: Int
  /// Where the text starts in the tail: after the ends table.
  var textOffset: Int { rowCapacity * 6 * 4 }

  /// A chunk with room for `rows` rows and `textBytes` bytes of text, not yet written.
  static func allocate(rows: Int, textBytes: Int) -> PackedFields.Storage {
    precondition(rows >= 0 && textBytes >= 0 && textBytes <= Int(UInt32.max))
    let header = PackedChunkHeader(rowCapacity: rows, textCapacity: textBytes)
    let buffer = PackedFields.Storage.create(minimumCapacity: header.textOffset + textBytes) {
      _ in header
    }
    return unsafeDowncast(buffer, to: PackedFields.Storage.self)
  }
}

/// Writes the rows of one packed chunk (see ``PackedFields``), a field at a time, before
/// anyone else can see it: the batch decoder's. Every write is checked against the room the
/// chunk was made with.
struct PackedChunkWriter {
  private let storage: PackedFields.Storage
  private let ends: UnsafeMutableRawPointer
  private let text: UnsafeMutablePointer<UInt8>
  private let rowCapacity: Int
  private let textCapacity: Int
  /// Rows finished so far.
  private(set) var rows = 0
  /// Fields of the current row finished so far.
  private var fields = 0
  /// Text bytes written so far.
  private var written = 0

  /// A writer of a new chunk with room for `rows` rows and `textBytes` bytes of text.
  init(rows: Int, textBytes: Int) {
    storage = PackedChunkHeader.allocate(rows: rows, textBytes: textBytes)
    rowCapacity = rows
    textCapacity = textBytes
    // The storage is held for as long as the writer: its tail does not move.
    let tail = storage.withUnsafeMutablePointerToElements { $0 }
    ends = UnsafeMutableRawPointer(tail)
    text = tail + rows * 6 * 4
  }

  /// Appends `count` bytes at `source` to the current field (valid UTF-8, as a whole field).
  mutating func append(_ source: UnsafePointer<UInt8>, count: Int) {
    precondition(count >= 0 && written + count <= textCapacity, "a packed chunk overflows")
    (text + written).initialize(from: source, count: count)
    written += count
  }

  /// Appends one byte to the current field.
  mutating func append(_ byte: UInt8) {
    precondition(written < textCapacity, "a packed chunk overflows")
    text[written] = byte
    written += 1
  }

  /// Ends the current field.
  mutating func endField() {
    precondition(fields < 6 && rows < rowCapacity, "a packed chunk's row has six fields")
    ends.storeBytes(
      of: UInt32(written), toByteOffset: (rows * 6 + fields) * 4, as: UInt32.self)
    fields += 1
  }

  /// Ends the current row (its six fields ended): its fields, as an address holds them.
  mutating func endRow() -> PackedFields {
    precondition(fields == 6, "a packed chunk's row has six fields")
    fields = 0
    rows += 1
    return PackedFields(storage: storage, row: UInt32(rows - 1))
  }
}
