import Cepis
import CepisSupport
import Foundation

/// One CEP of a `batch` input: the text as given, the CEP asked for it, and whether that is
/// the text's 7 digits with the leading zero a spreadsheet dropped.
struct BatchRow: Sendable {
  /// The line, or the CEP column's cell, as given.
  var input: String
  /// What is asked: ``input``, or its 7 digits with a leading zero when ``padded``.
  var cep: String
  /// Whether ``cep`` is ``input``'s 7 digits read with a leading zero.
  var padded: Bool

  /// The row of `text`: its 7 digits padded unless `strict` (a CEP already is kept as it is).
  init(_ text: String, strict: Bool) {
    input = text
    if !strict, cepNumber(ofField: text) == nil, let number = paddedCEPNumber(ofField: text) {
      cep = cepString(number)
      padded = true
    } else {
      cep = text
      padded = false
    }
  }
}

/// Splits a `batch` input into rows: a CEP per line, as always, or — when the first line is a
/// CSV header with a CEP column (or `--delimiter` or `--column` says the input is CSV) — the
/// CEP column of each record after the header, in the file's delimiter and encoding.
struct BatchSplitter {
  private var lines = LineSplitter()
  private var csv: CSVReader?
  private var column = 0
  private var headerPending = false
  private let encoding: CSVEncoding
  private let strict: Bool
  private var line = 0
  /// Whether the input has ended (an empty read was fed).
  private(set) var atEnd = false

  /// A splitter for an input that begins with `prefix` (up to the end of its first line, or
  /// all of it when `ended`).
  ///
  /// - Throws: ``UsageError`` when the header has no CEP column, or two.
  init(
    prefix: [UInt8], ended: Bool, options: DialectOptions, column name: String?,
    fileEncoding: CSVEncoding?, file: String, path: [String]
  ) throws(UsageError) {
    let bom = prefix.starts(with: [0xEF, 0xBB, 0xBF])
    let body = prefix[(bom ? 3 : 0)...]
    let sampled = DialectDetection.encoding(ofSample: body, complete: ended)
    encoding = options.encoding ?? (bom ? .utf8 : fileEncoding ?? sampled ?? .utf8)
    strict = options.strictCEP
    let end = DialectDetection.headerLineEnd(body) ?? body.endIndex
    let delimiter = options.delimiter ?? DialectDetection.delimiter(ofHeader: body[..<end])
    var headerReader = CSVReader(separator: delimiter, encoding: encoding)
    headerReader.append(body[..<end])
    headerReader.finish()
    let header = (try? headerReader.next())?.fields ?? []
    let isCSV =
      options.delimiter != nil || name != nil
      || header.contains { CEPColumn.fold($0) == "cep" }
    if isCSV {
      column = try CEPColumn.find(in: header, named: name, file: file, path: path)
      var reader = CSVReader(separator: delimiter, encoding: encoding)
      reader.onlyField = column
      reader.append(body)
      csv = reader
      headerPending = true
    } else {
      lines.feed(Array(body))
    }
    if ended { feed([]) }
  }

  /// Takes the bytes of one read: empty is the end of the input.
  mutating func feed(_ bytes: [UInt8]) {
    if bytes.isEmpty { atEnd = true }
    if csv != nil {
      if bytes.isEmpty { csv?.finish() } else { csv?.append(bytes) }
    } else {
      lines.feed(bytes)
    }
  }

  /// The next complete row, or `nil` when more input is needed (or, at the end, none is left).
  ///
  /// - Throws: `CSVError` for a malformed record, or a byte no character in the encoding.
  mutating func next() throws -> BatchRow? {
    if csv != nil {
      while let record = try csv?.next() {
        if headerPending {
          headerPending = false
          continue
        }
        let text = column < record.fields.count ? record.fields[column] : ""
        return BatchRow(text, strict: strict)
      }
      return nil
    }
    guard let bytes = lines.nextBytes() else { return nil }
    line += 1
    if encoding == .windows1252 && bytes.contains(where: { $0 >= 0x80 }) {
      guard let text = Windows1252.decode(bytes) else {
        let byte = Windows1252.firstUndefined(in: bytes) ?? 0
        throw CSVError(reason: .undefinedInWindows1252(byte: byte), line: line)
      }
      return BatchRow(text, strict: strict)
    }
    return BatchRow(String(decoding: bytes, as: UTF8.self), strict: strict)
  }
}
