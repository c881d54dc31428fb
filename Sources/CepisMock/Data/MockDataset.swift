import BrazilianDocuments
import CepisSupport
import Foundation

/// A point on the map with its precision, as in the `geo` object of a cep.is answer.
public struct MockGeo: Sendable, Hashable, Codable {
  /// Latitude in degrees.
  public var lat: Double
  /// Longitude in degrees.
  public var lon: Double
  /// Radius of uncertainty in metres (`raio_m`).
  public var raioM: Int
  /// Precision of the point: `logradouro` (street) or `localidade` (city).
  public var precisao: String

  /// Creates a point.
  public init(lat: Double, lon: Double, raioM: Int, precisao: String) {
    self.lat = lat
    self.lon = lon
    self.raioM = raioM
    self.precisao = precisao
  }

  enum CodingKeys: String, CodingKey {
    case lat
    case lon
    case raioM = "raio_m"
    case precisao
  }
}

/// One address, with the fields of a cep.is answer. Encodes to (and decodes from) the JSON of
/// `GET /{cep}`.
public struct MockAddress: Sendable, Hashable, Codable {
  /// The CEP, 8 digits, unmasked.
  public var cep: String
  /// The street (or square, avenue…).
  public var logradouro: String
  /// The complement, often empty (`lado ímpar`, `até 799/800`…).
  public var complemento: String
  /// The neighbourhood.
  public var bairro: String
  /// The city; empty marks a missing CEP in CSV answers.
  public var localidade: String
  /// The two-letter state code.
  public var uf: String
  /// The city's 7-digit IBGE code.
  public var ibge: String
  /// The coordinates, when known.
  public var geo: MockGeo?

  /// Creates an address.
  public init(
    cep: String, logradouro: String, complemento: String, bairro: String, localidade: String,
    uf: String, ibge: String, geo: MockGeo? = nil
  ) {
    self.cep = cep
    self.logradouro = logradouro
    self.complemento = complemento
    self.bairro = bairro
    self.localidade = localidade
    self.uf = uf
    self.ibge = ibge
    self.geo = geo
  }

  /// Decodes an address; missing text fields decode as empty.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    func text(_ key: CodingKeys) throws -> String {
      try container.decodeIfPresent(String.self, forKey: key) ?? ""
    }
    cep = try container.decode(String.self, forKey: .cep)
    logradouro = try text(.logradouro)
    complemento = try text(.complemento)
    bairro = try text(.bairro)
    localidade = try text(.localidade)
    uf = try text(.uf)
    ibge = try text(.ibge)
    geo = try container.decodeIfPresent(MockGeo.self, forKey: .geo)
  }
}

/// A fictitious person served by the cpfhub.io routes.
public struct MockPerson: Sendable, Hashable, Codable {
  /// The CPF, 11 digits with valid check digits.
  public var cpf: String
  /// The (fictitious) full name.
  public var name: String
  /// `M` or `F`.
  public var gender: String
  /// Day of birth (1–31).
  public var day: Int
  /// Month of birth (1–12).
  public var month: Int
  /// Year of birth.
  public var year: Int

  /// Creates a person.
  public init(cpf: String, name: String, gender: String, day: Int, month: Int, year: Int) {
    self.cpf = cpf
    self.name = name
    self.gender = gender
    self.day = day
    self.month = month
    self.year = year
  }

  /// The name in upper case, as cpfhub.io's `nameUpper`.
  public var nameUpper: String { name.uppercased() }

  /// The birth date as `dd/MM/yyyy`.
  public var birthDate: String {
    twoDigits(day) + "/" + twoDigits(month) + "/" + String(year)
  }
}

private func twoDigits(_ value: Int) -> String {
  value < 10 ? "0\(value)" : String(value)
}

/// The addresses and people a ``MockServer`` serves: the ground truth tests compare with.
///
/// ``sample`` holds a bundled, deterministic set of SAMPLE addresses (not DNE data: realistic
/// looking, fictitious where it matters) for all 27 states, plus the ``syntheticRange``: every
/// CEP in it whose value does not end in 9 exists and is generated on demand from its number.
public struct MockDataset: Sendable {
  /// The explicit addresses, keyed by the CEP's numeric value.
  let addresses: [Int: MockAddress]
  /// The explicit addresses' CSV rows (default column order, no line ending), by CEP value.
  let csvRows: [Int: [UInt8]]
  /// The explicit CEPs in the order they were defined.
  let orderedCEPs: [Int]
  /// The people served by the cpfhub.io routes.
  public let people: [MockPerson]
  private let peopleByCPF: [String: MockPerson]

  /// The synthetic CEP range, or `nil` for none.
  ///
  /// Every CEP `n` in the range with `n % 10 != 9` exists (so about 10% are not found), with
  /// fields derived from the number: `Rua Sintética <n / 10>`, `Bairro Sintético <…>`,
  /// `São Paulo`/`SP`/`3550308`, and a `geo` on two thirds of them. Explicit addresses win over
  /// synthetic ones. ``sample`` uses ``defaultSyntheticRange``, São Paulo state's range.
  public var syntheticRange: ClosedRange<Int>?

  /// The default synthetic range: `10000000...19999999`, inside São Paulo state's CEP range.
  public static let defaultSyntheticRange = 10_000_000...19_999_999

  /// Creates a dataset from addresses and people.
  public init(
    addresses: [MockAddress], people: [MockPerson] = [], syntheticRange: ClosedRange<Int>? = nil
  ) {
    var byValue: [Int: MockAddress] = [:]
    var rows: [Int: [UInt8]] = [:]
    var order: [Int] = []
    for address in addresses {
      guard let value = cepValue(address.cep) else { continue }
      var normalized = address
      normalized.cep = cepString(value)
      if byValue.updateValue(normalized, forKey: value) == nil { order.append(value) }
      var row: [UInt8] = []
      CSVField.appendRow(normalized.csvFields, to: &row)
      rows[value] = row
    }
    self.addresses = byValue
    self.csvRows = rows
    self.orderedCEPs = order
    self.people = people
    self.peopleByCPF = Dictionary(
      people.map { ($0.cpf, $0) }, uniquingKeysWith: { first, _ in first })
    self.syntheticRange = syntheticRange
  }

  /// The bundled sample: ≥ 300 SAMPLE addresses over the 27 states, the synthetic range
  /// ``defaultSyntheticRange`` and ≥ 20 fictitious people.
  public static let sample = MockDataset(
    addresses: SampleData.addresses(), people: SampleData.people(),
    syntheticRange: defaultSyntheticRange)

  /// The explicit (bundled or loaded) CEPs, unmasked, in definition order.
  public var sampleCEPs: [String] { orderedCEPs.map(cepString) }

  /// The explicit addresses in definition order.
  public var sampleAddresses: [MockAddress] { orderedCEPs.compactMap { addresses[$0] } }

  /// How many CEPs exist: explicit ones plus the existing synthetic ones.
  public var count: Int {
    guard let range = syntheticRange else { return addresses.count }
    let synthetic = syntheticCount(in: range)
    let overlap = addresses.keys.filter { range.contains($0) && $0 % 10 != 9 }.count
    return addresses.count + synthetic - overlap
  }

  private func syntheticCount(in range: ClosedRange<Int>) -> Int {
    // Values ≤ x ending in 9: (x + 1) / 10 (for x ≥ 0).
    let upper = range.upperBound
    let lower = range.lowerBound
    let nines = (upper + 1) / 10 - lower / 10
    return range.count - nines
  }

  /// The address of a CEP (8 digits or masked `01001-000`), or `nil` when it does not exist
  /// or is malformed.
  public func address(for cep: String) -> MockAddress? {
    guard let value = cepValue(cep) else { return nil }
    return address(forValue: value)
  }

  /// The address of the CEP with this numeric value.
  func address(forValue value: Int) -> MockAddress? {
    if let address = addresses[value] { return address }
    guard isSynthetic(value) else { return nil }
    return SyntheticAddress.address(value)
  }

  /// Whether the value is an existing synthetic CEP not overridden by an explicit address.
  func isSynthetic(_ value: Int) -> Bool {
    guard let range = syntheticRange else { return false }
    return range.contains(value) && value % 10 != 9 && addresses[value] == nil
  }

  /// Whether a CEP value exists.
  func exists(_ value: Int) -> Bool {
    addresses[value] != nil || isSynthetic(value)
  }

  /// The person with this CPF (11 digits), or `nil`.
  public func person(for cpf: String) -> MockPerson? { peopleByCPF[cpf] }

  /// Returns a copy with other people.
  public func withPeople(_ people: [MockPerson]) -> MockDataset {
    MockDataset(addresses: sampleAddresses, people: people, syntheticRange: syntheticRange)
  }

  /// Loads addresses from a file, replacing the sample addresses.
  ///
  /// Two formats are read. CSV (RFC 4180) with a header row naming the cep.is columns
  /// `cep,logradouro,complemento,bairro,localidade,uf,ibge` in any order, plus optional
  /// `lat,lon,raio_m,precisao`; or JSON lines (`.jsonl`, `.ndjson`, or a file starting with
  /// `{`), one object per line shaped like the `GET /{cep}` answer.
  ///
  /// - Parameters:
  ///   - url: The file.
  ///   - keepSyntheticRange: Whether the synthetic range of ``sample`` stays (default: no).
  ///   - people: The people to serve (default: the sample's).
  public static func load(
    contentsOf url: URL, keepSyntheticRange: Bool = false,
    people: [MockPerson] = MockDataset.sample.people
  ) throws -> MockDataset {
    let data = try Data(contentsOf: url)
    let firstByte = data.first { !($0 == 32 || $0 == 9 || $0 == 10 || $0 == 13) }
    let ext = url.pathExtension.lowercased()
    let addresses: [MockAddress]
    if ext == "jsonl" || ext == "ndjson" || ext == "json" || firstByte == UInt8(ascii: "{") {
      addresses = try loadJSONLines(data)
    } else {
      addresses = try loadCSV(data)
    }
    return MockDataset(
      addresses: addresses, people: people,
      syntheticRange: keepSyntheticRange ? defaultSyntheticRange : nil)
  }

  private static func loadJSONLines(_ data: Data) throws -> [MockAddress] {
    let decoder = JSONDecoder()
    var result: [MockAddress] = []
    for (number, line) in data.split(separator: UInt8(ascii: "\n")).enumerated() {
      if line.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) { continue }
      do {
        result.append(try decoder.decode(MockAddress.self, from: Data(line)))
      } catch {
        throw MockDatasetError(description: "line \(number + 1): \(error)")
      }
    }
    return result
  }

  private static func loadCSV(_ data: Data) throws -> [MockAddress] {
    var bytes = [UInt8](data)
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
    let records = CSVReader.records(String(decoding: bytes, as: UTF8.self))
    guard let header = records.first else { return [] }
    let names = header.map { $0.trimmingSpaces.lowercased() }
    guard let cepColumn = names.firstIndex(of: "cep") else {
      throw MockDatasetError(description: "the CSV header has no 'cep' column")
    }
    func column(_ name: String) -> Int? { names.firstIndex(of: name) }
    var result: [MockAddress] = []
    for (number, record) in records.dropFirst().enumerated() {
      if record.count == 1 && record[0].isEmpty { continue }
      func field(_ index: Int?) -> String {
        guard let index, index < record.count else { return "" }
        return record[index]
      }
      let cep = field(cepColumn)
      guard cepValue(cep) != nil else {
        throw MockDatasetError(description: "row \(number + 2): malformed CEP '\(cep)'")
      }
      var geo: MockGeo?
      if let lat = Double(field(column("lat"))), let lon = Double(field(column("lon"))) {
        geo = MockGeo(
          lat: lat, lon: lon, raioM: Int(field(column("raio_m"))) ?? 0,
          precisao: field(column("precisao")))
      }
      result.append(
        MockAddress(
          cep: cep, logradouro: field(column("logradouro")),
          complemento: field(column("complemento")), bairro: field(column("bairro")),
          localidade: field(column("localidade")), uf: field(column("uf")),
          ibge: field(column("ibge")), geo: geo))
    }
    return result
  }
}

/// The error thrown by ``MockDataset/load(contentsOf:keepSyntheticRange:people:)``.
public struct MockDatasetError: Error, CustomStringConvertible, Sendable {
  /// What was wrong.
  public var description: String
}

extension MockAddress {
  /// The CSV fields in the cep.is column order.
  var csvFields: [String] { [cep, logradouro, complemento, bairro, localidade, uf, ibge] }
}

/// The numeric value of a CEP written as 8 digits or `NNNNN-NNN`, or `nil` if malformed.
///
/// The mock parses and formats CEPs with code of its own, not the client's (`Cepis`'s
/// `normalizeCEP` and formatter): a server that shares the client's code cannot catch the
/// client's mistakes. It reads the wire strictly, as cep.is does.
func cepValue(_ text: some StringProtocol) -> Int? { cepValue(utf8: text.utf8) }

/// The value of a CEP given as UTF-8 bytes (see ``cepValue(_:)``).
func cepValue(utf8: some Collection<UInt8>) -> Int? {
  let count = utf8.count
  guard count == 8 || count == 9 else { return nil }
  var value = 0
  var digits = 0
  for (offset, byte) in utf8.enumerated() {
    if count == 9 && offset == 5 {
      guard byte == UInt8(ascii: "-") else { return nil }
      continue
    }
    guard byte >= 48 && byte <= 57 else { return nil }
    value = value * 10 + Int(byte - 48)
    digits += 1
  }
  return digits == 8 ? value : nil
}

/// Eight digits, zero-padded.
func cepString(_ value: Int) -> String {
  var bytes = [UInt8](repeating: 48, count: 8)
  var rest = value
  for index in stride(from: 7, through: 0, by: -1) {
    bytes[index] = UInt8(48 + rest % 10)
    rest /= 10
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// The masked form `NNNNN-NNN`.
func maskedCEP(_ cep: String) -> String {
  guard cep.utf8.count == 8 else { return cep }
  return String(cep.prefix(5)) + "-" + String(cep.suffix(3))
}

/// Whether `cpf` is 11 ASCII digits making a valid CPF (BrazilianDocuments' rules): the
/// cpfhub.io routes take digits only, never a masked CPF.
func isValidCPF(_ cpf: String) -> Bool {
  cpf.utf8.count == 11 && cpf.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && CPF.isValid(cpf)
}

/// The generated addresses of the synthetic range.
enum SyntheticAddress {
  static let complementos = [
    "", "lado par", "lado ímpar", "até 500", "de 501 ao fim, lado par", "", "", "", "", "",
  ]

  static func address(_ value: Int) -> MockAddress {
    MockAddress(
      cep: cepString(value), logradouro: "Rua Sintética \(value / 10)",
      complemento: complementos[value % 10], bairro: "Bairro Sintético \(value / 1000 % 1000)",
      localidade: "São Paulo", uf: "SP", ibge: "3550308", geo: geo(value))
  }

  static func geo(_ value: Int) -> MockGeo? {
    switch value % 3 {
    case 0:
      return MockGeo(
        lat: -23.5 - Double(value % 1000) / 10_000,
        lon: -46.6 - Double(value / 1000 % 1000) / 10_000,
        raioM: 100 + value % 7 * 10, precisao: "logradouro")
    case 1:
      return MockGeo(lat: -23.5505, lon: -46.6333, raioM: 25_000, precisao: "localidade")
    default:
      return nil
    }
  }

  private static let streetPrefix = Array("Rua Sintética ".utf8)
  private static let bairroPrefix = Array(",Bairro Sintético ".utf8)
  private static let suffix = Array(",São Paulo,SP,3550308".utf8)
  private static let csvComplementos: [[UInt8]] = complementos.map { text in
    var bytes: [UInt8] = []
    CSVField.append(text, to: &bytes)
    return bytes
  }

  /// Appends the CSV row (default columns, no line ending) of the synthetic CEP `value`,
  /// without going through `String`.
  static func appendCSVRow(_ value: Int, cepMasked: Bool, to out: inout [UInt8]) {
    appendCEP(value, masked: cepMasked, to: &out)
    out.append(UInt8(ascii: ","))
    out.append(contentsOf: streetPrefix)
    appendDecimal(value / 10, to: &out)
    out.append(UInt8(ascii: ","))
    out.append(contentsOf: csvComplementos[value % 10])
    out.append(contentsOf: bairroPrefix)
    appendDecimal(value / 1000 % 1000, to: &out)
    out.append(contentsOf: suffix)
  }
}

/// Appends the 8-digit (or masked) CEP of `value`.
func appendCEP(_ value: Int, masked: Bool, to out: inout [UInt8]) {
  let digits = asciiDigits(value, count: 8)
  withUnsafeBytes(of: digits.littleEndian) { bytes in
    if masked {
      out.append(contentsOf: bytes[0..<5])
      out.append(UInt8(ascii: "-"))
      out.append(contentsOf: bytes[5..<8])
    } else {
      out.append(contentsOf: bytes)
    }
  }
}

/// Appends a non-negative integer in decimal.
func appendDecimal(_ value: Int, to out: inout [UInt8]) {
  let value = max(value, 0)
  guard value < 100_000_000 else {
    out.append(contentsOf: String(value).utf8)
    return
  }
  var count = 1
  var rest = value / 10
  while rest > 0 {
    count += 1
    rest /= 10
  }
  withUnsafeBytes(of: asciiDigits(value, count: count).littleEndian) { bytes in
    out.append(contentsOf: bytes[0..<count])
  }
}

/// The last `count` (at most 8) decimal digits of `value` as ASCII, the first digit in the
/// lowest byte: dividing by the constant 10 (a multiplication), not by a power of ten held in a
/// variable, as the mock's CSV rows are built a million at a time in the benchmarks.
private func asciiDigits(_ value: Int, count: Int) -> UInt64 {
  var word: UInt64 = 0
  var rest = UInt64(value)
  for _ in 0..<count {
    word = word << 8 | (48 + rest % 10)
    rest /= 10
  }
  return word
}

/// RFC 4180 CSV reading (LF or CRLF line endings).
enum CSVReader {
  static func records(_ text: String) -> [[String]] {
    var records: [[String]] = []
    var record: [String] = []
    var field: [UInt8] = []
    var quoted = false
    var bytes = Array(text.utf8)[...]
    func endField() {
      record.append(String(decoding: field, as: UTF8.self))
      field.removeAll(keepingCapacity: true)
    }
    while let byte = bytes.popFirst() {
      if quoted {
        if byte == 34 {
          if bytes.first == 34 {
            field.append(34)
            bytes = bytes.dropFirst()
          } else {
            quoted = false
          }
        } else {
          field.append(byte)
        }
        continue
      }
      switch byte {
      case 34 where field.isEmpty: quoted = true
      case 44: endField()
      case 13 where bytes.first == 10: break
      case 10:
        endField()
        records.append(record)
        record = []
      default: field.append(byte)
      }
    }
    if !field.isEmpty || !record.isEmpty {
      endField()
      records.append(record)
    }
    return records
  }
}
