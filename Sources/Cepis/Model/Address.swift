import Foundation

/// A Brazilian postal address, as the Correios DNE has it for one CEP.
///
/// Every text field is a `String`, `""` when the database has nothing for it (a CEP that
/// covers a whole town has no `logradouro`), never `nil`. ``source`` says which service
/// answered: cep.is, or a public fallback (``Fallback``) when cep.is could not.
///
/// Two addresses are equal when every field is, ``source`` and ``staleEdition`` included: the
/// same street from cep.is and from ViaCEP are different answers (one has DNE coordinates, the
/// other none), and so are a current answer and one kept from an older edition.
///
/// An address from ``Client/lookupMany(_:)`` or
/// ``Client/lookups(_:cep:options:)->LookupStream<Rows>`` keeps its text in the buffer of the batch
/// answer it came in (up to 500 addresses, a few dozen kilobytes), shared with the other addresses
/// of that answer, as a `Substring` shares its `String`: a million answers cost a few thousand
/// allocations, not millions. Keeping a few addresses of a large run for long keeps their answers'
/// buffers too; setting any of an address's text fields gives it text of its own.
public struct Address: Sendable, Hashable, Codable {
  /// The text fields. A row of a batch answer keeps them packed in its answer's buffer, and a
  /// field becomes a `String` when it is read (see `AddressText`); that changes nothing a
  /// caller can see but the cost.
  var text: AddressText

  /// The CEP, 8 digits, never masked (`"01310100"`).
  public var cep: String {
    get { text.cep }
    set { text = .strings(text.unpacked.replacing(nil, with: newValue)) }
  }
  /// The street, avenue or square (`"Avenida Paulista"`).
  public var logradouro: String {
    get { text[.logradouro] }
    set { set(.logradouro, newValue) }
  }
  /// A complement such as a number range (`"de 612 a 1510 - lado par"`).
  public var complemento: String {
    get { text[.complemento] }
    set { set(.complemento, newValue) }
  }
  /// The neighbourhood.
  public var bairro: String {
    get { text[.bairro] }
    set { set(.bairro, newValue) }
  }
  /// The town or city.
  public var localidade: String {
    get { text[.localidade] }
    set { set(.localidade, newValue) }
  }
  /// The two-letter state code (`"SP"`).
  public var uf: String {
    get { text[.uf] }
    set { set(.uf, newValue) }
  }
  /// The IBGE code of the municipality (`"3550308"`).
  public var ibge: String {
    get { text[.ibge] }
    set { set(.ibge, newValue) }
  }
  /// Coordinates, when the API has them. Always `nil` from the bulk lookups
  /// (``Client/lookupMany(_:)``, `lookups`): the batch endpoint does not carry them. From ViaCEP always `nil`; from BrasilAPI, when it
  /// has a point, with an unknown precision (``Geo/isPrecise`` is `false`, ``Geo/raioM`` 0).
  public var geo: Geo? {
    get { text.geo }
    set {
      // Setting what is there already keeps a packed batch row packed (the cache and the bulk
      // engine clear `geo` and `staleEdition` of answers that have neither).
      guard newValue != text.geo else { return }
      text = .strings(text.unpacked.replacing(geo: newValue))
    }
  }
  /// The service that answered: ``AddressSource/cepis`` for every cep.is answer (single and
  /// batch), otherwise the fallback that stepped in.
  public var source: AddressSource {
    get { text.source }
    set {
      guard newValue != text.source else { return }
      text = .strings(text.unpacked.replacing(source: newValue))
    }
  }
  /// The DNE edition of an answer served from an ``AddressCache`` because cep.is and every
  /// fallback failed, when that edition is not the one cep.is is known to serve now (or no
  /// edition is known); `nil` for every answer that is current, the normal case.
  ///
  /// A stale address was true in the edition it names: the Correios may have changed it
  /// since (a street renamed, a CEP split). Encoded as `stale_edition` only when present.
  public var staleEdition: String? {
    get { text.staleEdition }
    set {
      guard newValue != text.staleEdition else { return }
      text = .strings(text.unpacked.replacing(staleEdition: newValue))
    }
  }

  /// Creates an address.
  public init(
    cep: String, logradouro: String = "", complemento: String = "", bairro: String = "",
    localidade: String = "", uf: String = "", ibge: String = "", geo: Geo? = nil,
    source: AddressSource = .cepis, staleEdition: String? = nil
  ) {
    self.text = .strings(
      AddressStrings(
        cep: cep, logradouro: logradouro, complemento: complemento, bairro: bairro,
        localidade: localidade, uf: uf, ibge: ibge, geo: geo, staleEdition: staleEdition,
        source: source))
  }

  /// A cep.is batch row: the CEP's number and its packed fields; no coordinates.
  init(cepNumber: Int, packed: PackedFields) {
    self.text = .packed(fields: packed, cep: UInt32(cepNumber))
  }

  /// The same address with its fields in a buffer of their own, when it is a row of a batch
  /// answer's chunk (which it would otherwise hold whole); `nil` when it holds nothing else.
  var repackedAlone: Address? {
    guard case .packed(let fields, let cep) = text, fields.sharesItsChunk else { return nil }
    return Address(cepNumber: Int(cep), packed: .alone(self))
  }

  /// The chunk a batch row's fields are in, when it holds other rows too (for tests).
  var chunkIdentity: ObjectIdentifier? {
    guard case .packed(let fields, _) = text, fields.sharesItsChunk else { return nil }
    return fields.chunkIdentity
  }

  /// How many rows a batch row's chunk has room for (for tests).
  var chunkRowCapacity: Int? {
    guard case .packed(let fields, _) = text else { return nil }
    return fields.chunkRowCapacity
  }

  /// The bytes of each field end in its packed chunk's table, 2 or 4 (for tests).
  var chunkEndWidth: Int? {
    guard case .packed(let fields, _) = text else { return nil }
    return fields.chunkEndWidth
  }

  /// Calls `body` with the UTF-8 bytes of one text field, without building a `String` when
  /// the address is a packed batch row (the bulk writers' fast path).
  func withUTF8<R>(_ field: AddressTextField, _ body: (UnsafeBufferPointer<UInt8>) -> R)
    -> R
  {
    switch text {
    case .packed(let fields, _): return fields.withUTF8(field, body)
    case .strings(let strings):
      var value = strings[field]
      return value.withUTF8(body)
    }
  }

  /// Calls `body` with the UTF-8 bytes of each text field in turn, in the API's column order
  /// (``AddressTextField``): one look at the storage for all six.
  package func forEachUTF8Field(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
    switch text {
    case .packed(let fields, _):
      for field in AddressTextField.allCases { fields.withUTF8(field, body) }
    case .strings(let strings):
      for field in AddressTextField.allCases {
        var value = strings[field]
        value.withUTF8(body)
      }
    }
  }

  private mutating func set(_ field: AddressText.Field, _ value: String) {
    text = .strings(text.unpacked.replacing(field, with: value))
  }

  /// Two addresses are equal when every field is, ``source`` included.
  public static func == (lhs: Address, rhs: Address) -> Bool {
    lhs.source == rhs.source && lhs.text == rhs.text
  }

  /// Hashes every field, as ``==(_:_:)`` compares them.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(cep)
    for field in AddressText.Field.allCases { hasher.combine(text[field]) }
    hasher.combine(geo)
    hasher.combine(staleEdition)
    hasher.combine(source)
  }

  /// The CEP masked as people write it: `"01310-100"`.
  public var formattedCEP: String { maskedCEP(cep) }

  /// Decodes an address, tolerating a masked `cep`, numbers for strings and missing fields.
  ///
  /// A missing `source` (as in every cep.is answer) decodes as ``AddressSource/cepis``, so
  /// what ``encode(to:)`` wrote decodes back to an equal address.
  ///
  /// - Throws: `DecodingError` when `cep` is missing or is not a CEP, when `source` names no
  ///   known service, or when a field has a shape no server drift explains (an object where
  ///   text belongs).
  public init(from decoder: Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    let rawCEP = try container.lenientString("cep")
    guard let cep = normalizedCEPDigits(rawCEP.utf8) else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: [AnyKey("cep")], debugDescription: "missing or malformed cep"))
    }
    let logradouro = try container.lenientString("logradouro")
    let complemento = try container.lenientString("complemento")
    let bairro = try container.lenientString("bairro")
    let localidade = try container.lenientString("localidade")
    let uf = try container.lenientString("uf")
    let ibge = try container.lenientString("ibge")
    let geoKey = AnyKey("geo")
    var geo: Geo?
    if container.contains(geoKey), try !container.decodeNil(forKey: geoKey) {
      geo = try container.decode(Geo.self, forKey: geoKey)
    }
    let fromCepis = decoder.userInfo[Self.fromCepisKey] as? Bool == true
    let sourceKey = AnyKey("source")
    var source = AddressSource.cepis
    // An answer of cep.is itself: whatever it may one day send as `source`, it is cep.is.
    if !fromCepis, container.contains(sourceKey), try !container.decodeNil(forKey: sourceKey) {
      source = try container.decode(AddressSource.self, forKey: sourceKey)
    }
    let staleKey = AnyKey("stale_edition")
    var staleEdition: String?
    if !fromCepis, container.contains(staleKey), try !container.decodeNil(forKey: staleKey) {
      staleEdition = try container.lenientString("stale_edition")
    }
    self.init(
      cep: cep, logradouro: logradouro, complemento: complemento, bairro: bairro,
      localidade: localidade, uf: uf, ibge: ibge, geo: geo, source: source,
      staleEdition: staleEdition)
  }

  /// The decoder `userInfo` key that marks a body as cep.is's own answer.
  static let fromCepisKey: CodingUserInfoKey = {
    guard let key = CodingUserInfoKey(rawValue: "is.cep.fromCepis") else {
      preconditionFailure("constant key")
    }
    return key
  }()

  /// Encodes the address with the API's field names, plus `source`.
  public func encode(to encoder: Encoder) throws {
    var container = encoder.container(keyedBy: AnyKey.self)
    try container.encode(cep, forKey: AnyKey("cep"))
    try container.encode(logradouro, forKey: AnyKey("logradouro"))
    try container.encode(complemento, forKey: AnyKey("complemento"))
    try container.encode(bairro, forKey: AnyKey("bairro"))
    try container.encode(localidade, forKey: AnyKey("localidade"))
    try container.encode(uf, forKey: AnyKey("uf"))
    try container.encode(ibge, forKey: AnyKey("ibge"))
    try container.encodeIfPresent(geo, forKey: AnyKey("geo"))
    try container.encode(source, forKey: AnyKey("source"))
    try container.encodeIfPresent(staleEdition, forKey: AnyKey("stale_edition"))
  }
}

/// The service an ``Address`` came from.
public enum AddressSource: String, Sendable, Hashable, Codable, CaseIterable,
  CustomStringConvertible
{
  /// [cep.is](https://cep.is): official Correios DNE data, the authority.
  case cepis
  /// [ViaCEP](https://viacep.com.br), a public fallback (see ``Fallback/viaCEP(baseURL:budget:)``).
  case viaCEP
  /// [BrasilAPI](https://brasilapi.com.br), a public fallback (see
  /// ``Fallback/brasilAPI(baseURL:budget:)``).
  case brasilAPI

  /// The service's name as people write it: `cep.is`, `ViaCEP`, `BrasilAPI`.
  public var description: String {
    switch self {
    case .cepis: return "cep.is"
    case .viaCEP: return "ViaCEP"
    case .brasilAPI: return "BrasilAPI"
    }
  }
}

/// Where a CEP is, and how precisely.
public struct Geo: Sendable, Hashable, Codable {
  /// Latitude in degrees.
  public var lat: Double
  /// Longitude in degrees.
  public var lon: Double
  /// The radius of uncertainty in metres (JSON `raio_m`).
  public var raioM: Int
  /// The precision: `"logradouro"` (the street) or `"localidade"` (only the town).
  public var precisao: String

  /// Creates a location.
  public init(lat: Double, lon: Double, raioM: Int, precisao: String) {
    self.lat = lat
    self.lon = lon
    self.raioM = raioM
    self.precisao = precisao
  }

  /// Whether the point locates the street itself rather than only the town.
  public var isPrecise: Bool { precisao == "logradouro" }

  /// Decodes a location; `raio_m` may be an integer or a decimal (rounded).
  ///
  /// - Throws: `DecodingError` when `lat` or `lon` is missing or not a number.
  public init(from decoder: Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    guard let lat = try container.lenientDouble("lat"),
      let lon = try container.lenientDouble("lon"),
      lat.isFinite, lon.isFinite
    else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: decoder.codingPath, debugDescription: "geo without lat/lon"))
    }
    self.lat = lat
    self.lon = lon
    let radius = try container.lenientDouble("raio_m") ?? 0
    self.raioM = radius.isFinite && abs(radius) < 1e9 ? Int(radius.rounded()) : 0
    self.precisao = try container.lenientString("precisao")
  }

  /// Encodes the location with the API's field names.
  public func encode(to encoder: Encoder) throws {
    var container = encoder.container(keyedBy: AnyKey.self)
    try container.encode(lat, forKey: AnyKey("lat"))
    try container.encode(lon, forKey: AnyKey("lon"))
    try container.encode(raioM, forKey: AnyKey("raio_m"))
    try container.encode(precisao, forKey: AnyKey("precisao"))
  }
}

/// The API's own report of its state and of the DNE edition it serves.
public struct Health: Sendable, Hashable, Codable {
  /// Whether the API considers itself healthy.
  public var ok: Bool
  /// A status word (`"ok"`, `"degraded"`).
  public var status: String
  /// The DNE edition being served.
  public var dne: String
  /// How many CEPs the database holds.
  public var ceps: Int
  /// When the database was generated (JSON `base_gerada_em`), as the API writes it.
  public var baseGeradaEm: String

  /// Creates a health report.
  public init(ok: Bool, status: String, dne: String, ceps: Int, baseGeradaEm: String) {
    self.ok = ok
    self.status = status
    self.dne = dne
    self.ceps = ceps
    self.baseGeradaEm = baseGeradaEm
  }

  /// Decodes a report, tolerating numbers as strings and missing fields; at least one of
  /// `ok` and `status` must be present.
  ///
  /// - Throws: `DecodingError` when neither `ok` nor `status` is there (not a health report).
  public init(from decoder: Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    let ok = try container.lenientBool("ok")
    let status = try container.lenientString("status")
    guard ok != nil || !status.isEmpty else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: decoder.codingPath, debugDescription: "neither ok nor status"))
    }
    self.ok = ok ?? (status == "ok")
    self.status = status.isEmpty ? (self.ok ? "ok" : "degraded") : status
    self.dne = try container.lenientString("dne")
    let count = try container.lenientDouble("ceps") ?? 0
    self.ceps = count.isFinite && count >= 0 && count < 1e15 ? Int(count) : 0
    self.baseGeradaEm = try container.lenientString("base_gerada_em")
  }

  /// Encodes the report with the API's field names.
  public func encode(to encoder: Encoder) throws {
    var container = encoder.container(keyedBy: AnyKey.self)
    try container.encode(ok, forKey: AnyKey("ok"))
    try container.encode(status, forKey: AnyKey("status"))
    try container.encode(dne, forKey: AnyKey("dne"))
    try container.encode(ceps, forKey: AnyKey("ceps"))
    try container.encode(baseGeradaEm, forKey: AnyKey("base_gerada_em"))
  }
}
