import BrazilianDocuments
import CepisSupport
import Foundation

extension Responder {
  static let csvColumns = [
    "cep", "logradouro", "complemento", "bairro", "localidade", "uf", "ibge",
  ]
  /// The column order of ``MockFault/csvColumnsShuffled``.
  static let shuffledColumns = [6, 0, 4, 1, 5, 3, 2]

  /// `GET /csv?ceps=…` (cep.is): a kept answer when there is one, else a built one.
  func csv(_ request: MockHTTPRequest, faults: Set<MockFault>) -> Response {
    // See `MockServer.Configuration.keptCSVAnswerBytes`.
    let budget = keptCSVAnswerBytes
    guard budget > 0, faults.isEmpty, let query = request.query else {
      return builtCSV(request, faults: faults)
    }
    if let kept = keptCSVAnswers.withLock({ $0.answers[query] }) {
      return Response(status: 200, contentType: csvType, body: .bytes(kept))
    }
    let response = builtCSV(request, faults: faults)
    if response.status == 200, case .bytes(let body) = response.body {
      keptCSVAnswers.withLock { kept in
        guard kept.bytes + body.count <= budget, kept.answers[query] == nil else { return }
        kept.answers[query] = body
        kept.bytes += body.count
      }
    }
    return response
  }

  private func builtCSV(_ request: MockHTTPRequest, faults: Set<MockFault>) -> Response {
    let items = queryDictionary(request.query)
    guard var list = items["ceps"], !list.isEmpty else {
      return message(400, "Parâmetro ceps ausente")
    }
    switch list.withUTF8({ parseCEPList($0, limit: 500) }) {
    case .values(let values):
      return Response(status: 200, contentType: csvType, body: .bytes(csvBody(values, faults)))
    case .invalid(let text):
      return message(400, "CEP inválido: \(text)")
    case .tooMany:
      return message(400, "Máximo de 500 CEPs por consulta")
    }
  }

  func csvBody(_ requested: [Int], _ faults: Set<MockFault>) -> [UInt8] {
    var rows = requested
    if faults.contains(.csvOmitMissing) { rows.removeAll { !dataset.exists($0) } }
    if faults.contains(.csvExtraRows) {
      let asked = Set(requested)
      let extras = dataset.orderedCEPs.lazy.filter { !asked.contains($0) }.prefix(3)
      for (index, extra) in extras.enumerated() {
        rows.insert(extra, at: index == 0 ? min(1, rows.count) : rows.count)
      }
    }
    if faults.contains(.csvReordered) && rows.count > 1 {
      var generator = SplitMix64(state: UInt64(rows.count) &* 0x5DEE_CE66)
      let original = rows
      rows.shuffle(using: &generator)
      if rows == original { rows.reverse() }
    }
    if faults.contains(.csvDuplicatedRows) { rows = rows.flatMap { [$0, $0] } }
    let masked = faults.contains(.csvMaskedCEPs)
    let columns = faults.contains(.csvColumnsShuffled) ? Self.shuffledColumns : Array(0..<7)
    let lineEnd: [UInt8] = faults.contains(.csvCRLF) ? [13, 10] : [10]

    var out: [UInt8] = []
    out.reserveCapacity(64 + rows.count * 96)
    if faults.contains(.csvBOM) { out.append(contentsOf: [0xEF, 0xBB, 0xBF]) }
    CSVField.appendRow(columns.map { Self.csvColumns[$0] }, to: &out)
    out.append(contentsOf: lineEnd)
    let fastPath = !masked && columns == Array(0..<7)
    for value in rows {
      if fastPath {
        if let row = dataset.csvRows[value] {
          out.append(contentsOf: row)
        } else if dataset.isSynthetic(value) {
          SyntheticAddress.appendCSVRow(value, cepMasked: false, to: &out)
        } else {
          appendCEP(value, masked: false, to: &out)
          out.append(contentsOf: ",,,,,,".utf8)
        }
      } else {
        var fields =
          dataset.address(forValue: value)?.csvFields
          ?? [cepString(value), "", "", "", "", "", ""]
        if masked { fields[0] = maskedCEP(fields[0]) }
        CSVField.appendRow(columns.map { fields[$0] }, to: &out)
      }
      out.append(contentsOf: lineEnd)
    }
    return out
  }
}
