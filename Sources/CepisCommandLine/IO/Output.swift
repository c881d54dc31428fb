import Cepis
import CepisSupport

/// How results are written on stdout.
enum OutputFormat: String, CaseIterable, Sendable {
  /// For people: one readable line per result.
  case text
  /// One JSON array (one element per line), UTF-8.
  case json
  /// One JSON object per line.
  case ndjson
  /// RFC 4180 CSV with a header row and CRLF line ends.
  case csv

  /// Reads `--format`; `nil` means text.
  static func parse(_ value: String?, path: [String]) throws(UsageError) -> OutputFormat {
    guard let value else { return .text }
    guard let format = OutputFormat(rawValue: value.lowercased()) else {
      var message = "invalid format '\(value)' (expected text, json, ndjson or csv)"
      if let guess = suggestion(for: value, among: allCases.map(\.rawValue)) {
        message += "; did you mean '\(guess)'?"
      }
      throw UsageError(message: message, path: path)
    }
    return format
  }
}

/// One CSV field, quoted per RFC 4180 when it holds a comma, a quote or a line break.
func csvField(_ text: String) -> String {
  CSVField.string(text)
}

/// One CSV row with a CRLF line end.
func csvRow(_ fields: [String]) -> String {
  var bytes: [UInt8] = []
  appendCSVRow(fields, to: &bytes)
  return String(decoding: bytes, as: UTF8.self)
}

/// Appends one CSV row with its CRLF line end to `out`.
func appendCSVRow(_ fields: [String], to out: inout [UInt8]) {
  CSVField.appendRow(fields, to: &out)
  out.append(13)
  out.append(10)
}

/// What became of one CEP.
enum CEPStatus: Sendable, Equatable {
  case ok
  case notFound
  case invalid
  case error(kind: String)

  /// The stable word scripts see: `ok`, `not_found`, `invalid`, `error: <kind>`.
  var label: String {
    switch self {
    case .ok: return "ok"
    case .notFound: return "not_found"
    case .invalid: return "invalid"
    case .error(let kind): return "error: \(kind)"
    }
  }
}

/// What became of one input CEP.
enum Resolution: Sendable, Equatable {
  case found(Address)
  case notFound
  case invalid
  case failed(CepisError)
}

/// The result of looking up one input.
struct CEPResult: Sendable, Equatable {
  /// The input as given.
  var input: String
  /// The normalized CEP, when the input is one.
  var cep: String?
  /// What happened.
  var status: CEPStatus
  /// The address, when found.
  var address: Address?
  /// A human explanation when not `ok`.
  var message: String?
  /// Whether the input was 7 digits, read as ``cep`` with the leading zero a spreadsheet
  /// dropped (`batch`, unless `--strict-cep`).
  var padded = false

  /// The status scripts see: ``CEPStatus/label``, with `_padded` after `ok` and `not_found`
  /// when the CEP was read from 7 digits.
  var statusLabel: String {
    guard padded else { return status.label }
    switch status {
    case .ok, .notFound: return status.label + "_padded"
    case .invalid, .error: return status.label
    }
  }

  /// Marks the result as the answer for `cep`, read from the 7 digits of ``input``.
  mutating func markPadded(cep: String) {
    self.cep = cep
    padded = true
    if status == .notFound { message = "CEP \(maskedCEP(cep)) not found" }
  }

  init(input: String, resolution: Resolution) {
    self.input = input
    self.cep = try? normalizeCEP(input)
    switch resolution {
    case .found(let address):
      status = .ok
      self.address = address
    case .notFound:
      status = .notFound
      message = "CEP \(maskedCEP(cep ?? input)) not found"
    case .invalid:
      status = .invalid
      message = "invalid CEP '\(input)': expected 8 digits, as in 01001-000"
    case .failed(let error):
      status = .error(kind: error.kind)
      message = error.message
    }
  }

  /// The result of a `lookups` answer for `input`: a malformed CEP is `invalid`; any other
  /// failure (a 400 for a whole chunk included) is the chunk's error.
  init(input: String, answer: Result<Address?, CepisError>) {
    switch answer {
    case .success(let address?): self.init(input: input, resolution: .found(address))
    case .success(nil): self.init(input: input, resolution: .notFound)
    case .failure(let error):
      if case .invalidCEP = error, cepNumber(ofField: input) == nil {
        self.init(input: input, resolution: .invalid)
      } else {
        self.init(input: input, resolution: .failed(error))
      }
    }
  }

  static let csvHeader = [
    "input", "cep", "status", "logradouro", "complemento", "bairro", "localidade", "uf", "ibge",
    "lat", "lon", "source",
  ]

  /// The CSV record (``csvHeader``'s columns) with its CRLF, written straight into `out`: an
  /// address's fields are copied from their bytes, never made into strings.
  func appendCSV(to out: inout [UInt8]) {
    let comma = UInt8(ascii: ",")
    CSVField.append(input, to: &out)
    out.append(comma)
    CSVField.append(cep ?? "", to: &out)
    out.append(comma)
    CSVField.append(statusLabel, to: &out)
    if let address {
      address.forEachUTF8Field { field in
        out.append(comma)
        CSVField.append(utf8: field, to: &out)
      }
      out.append(comma)
      if let geo = address.geo { CSVField.append("\(geo.lat)", to: &out) }
      out.append(comma)
      if let geo = address.geo { CSVField.append("\(geo.lon)", to: &out) }
      out.append(comma)
      CSVField.append(address.source.rawValue, to: &out)
    } else {
      // Six address fields, lat, lon and source: all empty.
      out.append(contentsOf: repeatElement(comma, count: 9))
    }
    out.append(13)
    out.append(10)
  }

  /// The JSON record, compact, written straight into `out`: no tree per row, and an
  /// address's fields escaped from their bytes, never made into strings.
  func appendJSON(to out: inout [UInt8]) {
    out.append(contentsOf: #"{"input":"#.utf8)
    JSONValue.appendString(input, to: &out)
    out.append(contentsOf: #","cep":"#.utf8)
    JSONValue.optional(cep).append(to: &out)
    out.append(contentsOf: #","status":"#.utf8)
    JSONValue.appendString(statusLabel, to: &out)
    var field = 0
    if let address {
      address.forEachUTF8Field { bytes in
        out.append(contentsOf: Self.jsonFieldKeys[field])
        JSONValue.appendString(utf8: bytes, to: &out)
        field += 1
      }
    } else {
      for key in Self.jsonFieldKeys {
        out.append(contentsOf: key)
        out.append(contentsOf: #""""#.utf8)
      }
    }
    out.append(contentsOf: #","geo":"#.utf8)
    if let geo = address?.geo {
      JSONValue.object([
        ("lat", .double(geo.lat)), ("lon", .double(geo.lon)), ("raio_m", .int(geo.raioM)),
        ("precisao", .string(geo.precisao)),
      ]).append(to: &out)
    } else {
      out.append(contentsOf: "null".utf8)
    }
    out.append(contentsOf: #","source":"#.utf8)
    JSONValue.optional(address?.source.rawValue).append(to: &out)
    out.append(contentsOf: #","message":"#.utf8)
    JSONValue.optional(message).append(to: &out)
    out.append(UInt8(ascii: "}"))
  }

  /// `,"logradouro":` and the other text fields' keys, in ``Address``'s field order (that of
  /// its `forEachUTF8Field`).
  private static let jsonFieldKeys: [[UInt8]] = [
    "logradouro", "complemento", "bairro", "localidade", "uf", "ibge",
  ].map { Array(",\"\($0)\":".utf8) }

  /// `01310-100  Avenida Paulista, de 612 a 1510 - lado par, Bela Vista, São Paulo/SP`.
  func textLine(bold: Bool = false) -> String {
    let shown = cep.map(maskedCEP) ?? input
    var head = bold ? "\u{1B}[1m\(shown)\u{1B}[0m" : shown
    if padded { head += " (from 7 digits, \(input))" }
    guard let a = address else {
      switch status {
      case .notFound: return "\(head)  not found"
      case .invalid: return "\(head)  invalid CEP"
      case .error: return "\(head)  \(status.label): \(message ?? "")"
      case .ok: return head
      }
    }
    var street = a.logradouro
    if !a.complemento.isEmpty { street += street.isEmpty ? a.complemento : ", " + a.complemento }
    var parts: [String] = []
    if !street.isEmpty { parts.append(street) }
    if !a.bairro.isEmpty { parts.append(a.bairro) }
    parts.append(a.uf.isEmpty ? a.localidade : "\(a.localidade)/\(a.uf)")
    var line = "\(head)  " + parts.joined(separator: ", ")
    if !a.ibge.isEmpty { line += " (IBGE \(a.ibge))" }
    if let geo = a.geo {
      // A fallback's point has no known radius: no "±0 m" that would claim precision.
      let radius = a.source == .cepis || geo.raioM > 0 ? " ±\(geo.raioM) m" : ""
      line += " [\(geo.lat), \(geo.lon)\(radius)]"
    }
    if a.source != .cepis { line += "  (from \(a.source))" }
    return line
  }
}

/// Writes a stream of rows in one format: a header or an opening bracket first, then rows as
/// they come, then the closing bracket.
struct RecordWriter {
  let format: OutputFormat
  let console: Console
  let csvHeader: [String]
  private var count = 0
  /// One row's bytes, reused from row to row (CSV and JSON are built as bytes, never as a
  /// `String`).
  private var scratch: [UInt8] = []

  init(format: OutputFormat, console: Console, csvHeader: [String]) {
    self.format = format
    self.console = console
    self.csvHeader = csvHeader
  }

  /// Writes the CSV header or the JSON array's opening.
  func begin() {
    switch format {
    case .csv: console.out(csvRow(csvHeader))
    case .json: console.out("[")
    case .text, .ndjson: break
    }
  }

  /// Writes one row; only the format's own rendering is built.
  mutating func write(
    text: @autoclosure () -> String, json: @autoclosure () -> JSONValue,
    csv: @autoclosure () -> [String]
  ) {
    write(text: text(), json: { json().append(to: &$0) }, csv: { appendCSVRow(csv(), to: &$0) })
  }

  /// Writes one row given as writers of its JSON value and of its CSV record (CRLF included);
  /// only the format's own is called.
  mutating func write(
    text: @autoclosure () -> String, json: (inout [UInt8]) -> Void,
    csv: (inout [UInt8]) -> Void
  ) {
    scratch.removeAll(keepingCapacity: true)
    switch format {
    case .text:
      console.out(text() + "\n")
    case .ndjson:
      json(&scratch)
      scratch.append(10)
      console.out(bytes: scratch)
    case .csv:
      csv(&scratch)
      console.out(bytes: scratch)
    case .json:
      if count > 0 { scratch.append(UInt8(ascii: ",")) }
      scratch.append(10)
      json(&scratch)
      console.out(bytes: scratch)
    }
    count += 1
  }

  /// Closes the JSON array.
  func end() {
    if format == .json { console.out(count == 0 ? "]\n" : "\n]\n") }
  }
}
