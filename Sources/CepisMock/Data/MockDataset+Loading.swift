import CepisSupport
import Foundation

extension MockDataset {
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
