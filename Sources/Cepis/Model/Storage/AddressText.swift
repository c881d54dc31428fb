// How an `Address` holds its seven text fields.
//
// A single lookup or a fallback builds its strings once, and they are kept as they are. A row
// of a batch answer is kept as one buffer instead: its six fields, unescaped, copied from the
// response in one allocation, with the CEP as a number, so that a million-row batch costs one
// allocation per row rather than a `String` per field (where the profile of `lookupMany` spent
// most of its time: Benchmarks/ANALYSIS.md, "The batch decoder"). A field becomes a `String`
// when it is read. The packed buffer (its layout, its reader and its writer, which change
// together) is in `PackedChunk.swift`.

/// The text of an ``Address``: strings, or one packed batch row.
enum AddressText: Sendable {
  /// Seven strings, shared (copy on write) between copies of the address.
  case strings(AddressStrings)
  /// A batch row of cep.is: the other fields in one buffer, the CEP as its number. (The
  /// fields first: the chunk's reference at the start of both cases leaves room for the case
  /// in its spare bits, so that an address is two words wide.)
  case packed(fields: PackedFields, cep: UInt32)

  /// Which of the six packed fields (the CEP is the number).
  typealias Field = AddressTextField

  var cep: String {
    switch self {
    case .strings(let strings): return strings.cep
    case .packed(_, let number): return cepString(Int(number))
    }
  }

  subscript(field: Field) -> String {
    switch self {
    case .strings(let strings): return strings[field]
    case .packed(let fields, _): return fields[field]
    }
  }

  /// The coordinates: a batch row never has them.
  var geo: Geo? {
    switch self {
    case .strings(let strings): return strings.geo
    case .packed: return nil
    }
  }

  /// The service that answered: a batch row is cep.is's.
  var source: AddressSource {
    switch self {
    case .strings(let strings): return strings.source
    case .packed: return .cepis
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
        geo: nil, staleEdition: nil, source: .cepis)
    }
  }

  /// Whether two texts are equal field by field; the same packed row without reading it.
  static func == (lhs: AddressText, rhs: AddressText) -> Bool {
    if case .strings(let left) = lhs, case .strings(let right) = rhs, left === right {
      return true
    }
    if case .packed(let leftFields, let left) = lhs, case .packed(let rightFields, let right) = rhs,
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

/// The seven strings of an address, its coordinates, its stale edition and its source,
/// immutable: a change makes a new box. (The last three live here, not in `Address`, so that
/// an address is two words wide.)
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
  let source: AddressSource

  init(
    cep: String, logradouro: String, complemento: String, bairro: String, localidade: String,
    uf: String, ibge: String, geo: Geo?, staleEdition: String?, source: AddressSource
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
    self.source = source
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

  /// A copy with other coordinates, stale edition or source: each one given replaces the
  /// current one (`geo: .some(nil)` clears the coordinates), the rest are kept.
  func replacing(
    geo: Geo?? = .none, staleEdition: String?? = .none, source: AddressSource? = nil
  ) -> AddressStrings {
    AddressStrings(
      cep: cep, logradouro: logradouro, complemento: complemento, bairro: bairro,
      localidade: localidade, uf: uf, ibge: ibge, geo: geo ?? self.geo,
      staleEdition: staleEdition ?? self.staleEdition, source: source ?? self.source)
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
      ibge: field == .ibge ? value : ibge, geo: geo, staleEdition: staleEdition, source: source)
  }
}
