import Cepis
import CepisSupport

/// What `enrich` wrote for one row.
enum EnrichStatus: UInt8, Sendable {
  case found
  case notFound
  case invalid
  case failed
  case blank
}

/// The fields `enrich` appends to a row: `,logradouro,complemento,bairro,localidade,uf,ibge`
/// and `,cepis_status`, written straight into the output buffer.
enum EnrichAnswer {
  /// The appended fields of a row whose CEP does not exist.
  static let notFound = Array(",,,,,,,not_found".utf8)

  /// The appended fields of a row whose CEP is malformed: never sent.
  static let invalid = Array(",,,,,,,invalid".utf8)

  /// The appended fields of every row of a chunk that failed with `error`: empty address
  /// fields and `error: <kind>` for the status.
  static func failure(_ error: CepisError) -> [UInt8] {
    var appended = Array(",,,,,,".utf8)
    appendCSVField("error: \(error.kind)", to: &appended)
    return appended
  }

  /// Appends the fields of a found address to `out`, reading each field's bytes in place (a
  /// batch answer's fields are never made into strings); a field is quoted only when it holds
  /// a comma, a quote or a line break.
  static func appendFound(_ address: Address, to out: inout [UInt8]) {
    address.forEachUTF8Field { appendField($0, to: &out) }
    out.append(contentsOf: ",ok".utf8)
  }

  /// `,` and a field: its bytes copied as they are when nothing in them needs quoting (nearly
  /// always), else quoted by ``CSVField``.
  @inline(__always)
  private static func appendField(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    out.append(UInt8(ascii: ","))
    for byte in bytes
    where byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\"") || byte == 10 || byte == 13 {
      CSVField.append(String(decoding: bytes, as: UTF8.self), to: &out)
      return
    }
    out.append(contentsOf: bytes)
  }
}

/// Appends `,` and `text` as one CSV field, quoted per RFC 4180 when it holds a comma, a
/// quote or a line break (``CSVField``, the package's one field writer).
func appendCSVField(_ text: String, to out: inout [UInt8]) {
  out.append(UInt8(ascii: ","))
  CSVField.append(text, to: &out)
}
