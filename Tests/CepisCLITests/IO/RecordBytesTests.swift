import BrazilianDocuments
import CepisSupport
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis
@testable import CepisCommandLine

/// `cepis batch` and `cepis lookup` write each CEP's record straight into bytes
/// (`CEPResult.appendJSON` / `appendCSV`), an address's fields escaped from where they are kept.
/// A plain reference builds the same record as a `JSONValue` tree and a `[String]` row, field
/// by field through `Address`'s public properties. Over seeded results — addresses packed by
/// the batch decoder and addresses made of strings, fields drawn from the characters that need
/// care in JSON and in CSV, with and without a point, every source and status — both write the
/// same bytes.
@Suite("cepis output records, written as bytes")
struct RecordBytesTests {
  @Test func recordsMatchAPlainReference() async throws {
    let outcome = await runOffThePool { Result { try Self.recordMismatches(count: 20_000) } }
    let mismatches = try outcome.get()
    #expect(mismatches.isEmpty, "first records written differently: \(mismatches)")
  }

  /// The old `CEPResult.json`: a tree, field by field.
  static func referenceJSON(_ result: CEPResult) -> JSONValue {
    let a = result.address
    let geo: JSONValue =
      a?.geo.map { geo in
        .object([
          ("lat", .double(geo.lat)), ("lon", .double(geo.lon)), ("raio_m", .int(geo.raioM)),
          ("precisao", .string(geo.precisao)),
        ])
      } ?? .null
    return .object([
      ("input", .string(result.input)),
      ("cep", .optional(result.cep)),
      ("status", .string(result.status.label)),
      ("logradouro", .string(a?.logradouro ?? "")),
      ("complemento", .string(a?.complemento ?? "")),
      ("bairro", .string(a?.bairro ?? "")),
      ("localidade", .string(a?.localidade ?? "")),
      ("uf", .string(a?.uf ?? "")),
      ("ibge", .string(a?.ibge ?? "")),
      ("geo", geo),
      ("source", .optional(a?.source.rawValue)),
      ("message", .optional(result.message)),
    ])
  }

  /// The old `CEPResult.csvFields`, as a row.
  static func referenceCSV(_ result: CEPResult) -> String {
    let a = result.address
    return csvRow([
      result.input, result.cep ?? "", result.status.label, a?.logradouro ?? "",
      a?.complemento ?? "", a?.bairro ?? "", a?.localidade ?? "", a?.uf ?? "", a?.ibge ?? "",
      a?.geo.map { "\($0.lat)" } ?? "", a?.geo.map { "\($0.lon)" } ?? "",
      a?.source.rawValue ?? "",
    ])
  }

  /// The first (at most 5) of `count` seeded results whose bytes differ from the reference's.
  static func recordMismatches(count: Int) throws -> [String] {
    var alphabet: [Unicode.Scalar] = [
      "a", "Z", "0", " ", "\"", "\\", ",", "/", "é", "ç", "\u{7F}", "\r", "\n", "\t",
    ]
    alphabet += [0x2020, 0x2027, 0x2028, 0x2029, 0x1F600].compactMap(Unicode.Scalar.init)
    alphabet += (0..<0x20).map { Unicode.Scalar(UInt8($0)) }
    var random = SplitMix64(state: 0x5EED_0F_0B7E5)
    func next(_ bound: Int) -> Int { Int(truncatingIfNeeded: random.next() >> 1) % bound }
    func text(nonEmpty: Bool = false) -> String {
      var text = ""
      for _ in 0..<(next(12) + (nonEmpty ? 1 : 0)) {
        text.unicodeScalars.append(alphabet[next(alphabet.count)])
      }
      return text
    }
    func fields() -> [String] { (0..<6).map { $0 == 3 ? text(nonEmpty: true) : text() } }

    // Packed addresses: a /csv answer of 500 rows with hostile fields, through the decoder.
    let ceps = (0..<500).map { String(10_000_000 + $0 * 7) }
    var body: [UInt8] = Array("cep,logradouro,complemento,bairro,localidade,uf,ibge\r\n".utf8)
    var expected: [[String]] = []
    for cep in ceps {
      let row = fields()
      expected.append(row)
      appendCSVRow([cep] + row, to: &body)
    }
    let packed = try Client.decodeBatchRows(Data(body), chunk: ceps)
    for (index, address) in packed.enumerated() {
      // The decoder's own fields, before any record is written from them.
      guard let address, case .packed = address.text,
        [
          address.logradouro, address.complemento, address.bairro, address.localidade,
          address.uf, address.ibge,
        ] == expected[index]
      else { return ["the packed decoder did not give back row \(index)"] }
    }

    var mismatches: [String] = []
    for _ in 0..<count {
      let input =
        [
          ceps[next(ceps.count)], "01310-100", "1000000", text(), "oops, \"quoted\"",
        ][next(5)]
      let resolution: Resolution
      switch next(5) {
      case 0, 1:
        resolution = .found(try #require(packed[next(packed.count)]))
      case 2:
        let row = fields()
        let geo =
          next(2) == 0
          ? nil
          : Geo(
            lat: Double(next(180_000)) / 1_000 - 90, lon: -Double(next(90_000)) / 997,
            raioM: next(5_000), precisao: text())
        resolution = .found(
          Address(
            cep: "01310100", logradouro: row[0], complemento: row[1], bairro: row[2],
            localidade: row[3], uf: row[4], ibge: row[5], geo: geo,
            source: AddressSource.allCases[next(AddressSource.allCases.count)]))
      case 3:
        resolution = next(2) == 0 ? .notFound : .invalid
      default:
        resolution = .failed(.networkError(message: text()))
      }
      let result = CEPResult(input: input, resolution: resolution)
      var json: [UInt8] = []
      result.appendJSON(to: &json)
      var csv: [UInt8] = []
      result.appendCSV(to: &csv)
      let jsonMatches = json == referenceJSON(result).bytes
      let csvMatches = csv == Array(referenceCSV(result).utf8)
      if !(jsonMatches && csvMatches) && mismatches.count < 5 {
        mismatches.append(
          "\(input.debugDescription) \(result.status.label): json \(jsonMatches), csv \(csvMatches)"
        )
      }
    }
    return mismatches
  }
}
