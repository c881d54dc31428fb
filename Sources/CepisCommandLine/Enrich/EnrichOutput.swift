import Cepis
import CepisSupport

/// What `enrich` wrote for one row.
enum EnrichStatus: UInt8, Sendable {
  case found
  case notFound
  case invalid
  case failed
  case blank
  /// Found, but an address field holds a character the output's encoding (Windows-1252)
  /// cannot hold: the address is left out rather than written wrong.
  case unencodable
}

/// The fields `enrich` appends to a row — `logradouro`, `complemento`, `bairro`,
/// `localidade`, `uf`, `ibge` and `cepis_status`, each after the file's delimiter — written
/// straight into the output buffer, in the output's encoding.
struct EnrichAnswer {
  /// The file's field separator.
  let delimiter: UInt8
  /// Whether the address fields are written in Windows-1252 (else UTF-8, as the API gives).
  let windows1252: Bool
  /// The appended fields of a row whose CEP does not exist.
  let notFound: [UInt8]
  /// ``notFound`` for a CEP of 7 digits read with a leading zero.
  let notFoundPadded: [UInt8]
  /// The appended fields of a row whose CEP is malformed: never sent.
  let invalid: [UInt8]
  /// The appended fields of a found row whose address Windows-1252 cannot hold.
  let unencodable: [UInt8]
  private let ok: [UInt8]
  private let okPadded: [UInt8]

  init(delimiter: UInt8, encoding: CSVEncoding) {
    self.delimiter = delimiter
    self.windows1252 = encoding == .windows1252
    let empty = [UInt8](repeating: delimiter, count: 7)
    notFound = empty + Array("not_found".utf8)
    notFoundPadded = empty + Array("not_found_padded".utf8)
    invalid = empty + Array("invalid".utf8)
    unencodable = empty + Array("unencodable".utf8)
    ok = [delimiter] + Array("ok".utf8)
    okPadded = [delimiter] + Array("ok_padded".utf8)
  }

  /// The header's appended column names, each after the delimiter.
  var headerColumns: [UInt8] {
    var out: [UInt8] = []
    for name in EnrichCommand.appendedColumns {
      out.append(delimiter)
      out += Array(name.utf8)
    }
    return out
  }

  /// The appended fields of every row of a chunk that failed with `error`: empty address
  /// fields and `error: <kind>` for the status.
  func failure(_ error: CepisError) -> [UInt8] {
    var appended = [UInt8](repeating: delimiter, count: 7)
    CSVField.append("error: \(error.kind)", delimiter: delimiter, to: &appended)
    return appended
  }

  /// Appends the fields of a found address to `out`, reading each field's bytes in place (a
  /// batch answer's fields are never made into strings); a field is quoted only when it holds
  /// the delimiter, a quote or a line break. `false`, with `out` as it was, when the output
  /// is Windows-1252 and a field holds a character it has not.
  func appendFound(_ address: Address, padded: Bool, to out: inout [UInt8]) -> Bool {
    let mark = out.count
    var encodable = true
    address.forEachUTF8Field { bytes in
      guard encodable else { return }
      if windows1252 && bytes.contains(where: { $0 >= 0x80 }) {
        var encoded: [UInt8] = []
        guard Windows1252.append(utf8: bytes, to: &encoded) else {
          encodable = false
          return
        }
        encoded.withUnsafeBufferPointer { appendField($0, to: &out) }
      } else {
        appendField(bytes, to: &out)
      }
    }
    guard encodable else {
      out.removeSubrange(mark...)
      return false
    }
    out.append(contentsOf: padded ? okPadded : ok)
    return true
  }

  /// The delimiter and a field: its bytes copied as they are when nothing in them needs
  /// quoting (nearly always), else quoted by ``CSVField``.
  @inline(__always)
  private func appendField(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    out.append(delimiter)
    let delimiter = self.delimiter
    for byte in bytes
    where byte == delimiter || byte == UInt8(ascii: "\"") || byte == 10 || byte == 13 {
      CSVField.append(utf8: bytes, delimiter: delimiter, to: &out)
      return
    }
    out.append(contentsOf: bytes)
  }
}
