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

/// Six fields of valid UTF-8, back to back in one allocation (`ManagedBuffer`'s tail), and
/// where each ends. The buffer is written once by ``make(byteCount:_:)``, before anyone else
/// can see it, and never again; only reads follow, so sharing it between threads is safe: that
/// is the `@unchecked Sendable` (`ManagedBuffer` itself is never `Sendable`).
struct PackedFields: @unchecked Sendable {
  private final class Storage: ManagedBuffer<PackedEnds, UInt8> {}

  private let storage: Storage

  /// A buffer of `byteCount` bytes that `fill` writes, returning each field's end offset.
  /// `fill` must write valid UTF-8 into every byte up to the last end.
  static func make(
    byteCount: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> PackedEnds
  ) -> PackedFields {
    let buffer = Storage.create(minimumCapacity: byteCount) { _ in PackedEnds() }
    let storage = unsafeDowncast(buffer, to: Storage.self)
    storage.withUnsafeMutablePointers { header, bytes in header.pointee = fill(bytes) }
    return PackedFields(storage: storage)
  }

  /// Whether both name the same buffer.
  static func === (lhs: PackedFields, rhs: PackedFields) -> Bool { lhs.storage === rhs.storage }

  /// Calls `body` with the UTF-8 bytes of `field`, in place.
  func withUTF8<R>(_ field: AddressText.Field, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    storage.withUnsafeMutablePointers { header, bytes in
      let index = field.rawValue
      let start = index == 0 ? 0 : Int(header.pointee[index - 1])
      let end = Int(header.pointee[index])
      return body(UnsafeBufferPointer(start: bytes + start, count: end - start))
    }
  }

  subscript(field: AddressText.Field) -> String {
    storage.withUnsafeMutablePointers { header, bytes in
      let index = field.rawValue
      let start = index == 0 ? 0 : Int(header.pointee[index - 1])
      let end = Int(header.pointee[index])
      // Validated when the row was packed: decoding copies, it never repairs.
      return String(
        decoding: UnsafeBufferPointer(start: bytes + start, count: end - start), as: UTF8.self)
    }
  }
}
