/// The package's one RFC 4180 field writer: `cepis` output (every format's CSV, `enrich`'s
/// appended columns) and CepisMock's cep.is answers all quote a field through it.
///
/// A field is quoted when it holds a comma, a double quote, CR or LF, and a quote inside it is
/// doubled; anything else is written as it is.
package enum CSVField {
  /// Appends `text` as one field (no separator), quoted when needed; `delimiter` is the
  /// file's field separator (`,`, or `;` and tab in the dialects `cepis enrich` keeps).
  package static func append(
    _ text: String, delimiter: UInt8 = UInt8(ascii: ","), to out: inout [UInt8]
  ) {
    var text = text
    text.withUTF8 { append(utf8: $0, delimiter: delimiter, to: &out) }
  }

  /// ``append(_:delimiter:to:)`` for text given as its bytes (UTF-8, or any encoding in which
  /// the quote, CR, LF and the delimiter are their ASCII bytes).
  package static func append(
    utf8 bytes: UnsafeBufferPointer<UInt8>, delimiter: UInt8 = UInt8(ascii: ","),
    to out: inout [UInt8]
  ) {
    guard bytes.contains(where: { $0 == delimiter || needsQuotes($0) }) else {
      out.append(contentsOf: bytes)
      return
    }
    out.append(UInt8(ascii: "\""))
    for byte in bytes {
      if byte == UInt8(ascii: "\"") { out.append(byte) }
      out.append(byte)
    }
    out.append(UInt8(ascii: "\""))
  }

  /// Appends `fields` separated by commas, without a line end.
  package static func appendRow(_ fields: [String], to out: inout [UInt8]) {
    for (index, field) in fields.enumerated() {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      append(field, to: &out)
    }
  }

  /// `text` as one field, quoted when needed.
  package static func string(_ text: String) -> String {
    guard text.utf8.contains(where: needsQuotes) else { return text }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.utf8.count + 2)
    append(text, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Whether a byte forces quoting in a comma-separated file: `,`, `"`, LF or CR.
  @inline(__always)
  private static func needsQuotes(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\"") || byte == 10 || byte == 13
  }
}
