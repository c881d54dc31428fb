/// The package's one JSON writer: `cepis` output (`--format json`/`ndjson`, `enrich`'s summary)
/// and CepisMock's answers are all written through it.
///
/// Objects keep their keys in the order given, so output is stable and reads like the API's
/// own. Strings are written as UTF-8; `"`, `\`, control characters and U+2028/U+2029 are
/// escaped. A non-finite `double` is written as `null`.
///
/// ```swift
/// let value: JSONValue = ["cep": .string("01001000"), "geo": .null]
/// value.rendered  // {"cep":"01001000","geo":null}
/// ```
package indirect enum JSONValue: Sendable, Equatable, ExpressibleByDictionaryLiteral,
  ExpressibleByArrayLiteral
{
  /// A string.
  case string(String)
  /// An integer.
  case int(Int)
  /// A floating-point number (`null` when not finite).
  case double(Double)
  /// `true` or `false`.
  case bool(Bool)
  /// `null`.
  case null
  /// An object whose keys keep the order given.
  case object([(String, JSONValue)])
  /// An array.
  case array([JSONValue])

  /// An object from a literal, keys in the literal's order.
  package init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(elements)
  }

  /// An array from a literal.
  package init(arrayLiteral elements: JSONValue...) {
    self = .array(elements)
  }

  /// Two values are equal when they render to the same text.
  package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.bytes == rhs.bytes }

  /// `.string(value)`, or `.null` for `nil`.
  package static func optional(_ value: String?) -> JSONValue {
    value.map(JSONValue.string) ?? .null
  }

  /// Compact JSON text.
  package var rendered: String { String(decoding: bytes, as: UTF8.self) }

  /// Compact JSON, as UTF-8 bytes.
  package var bytes: [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(128)
    append(to: &out)
    return out
  }

  /// Appends compact JSON to `out`.
  package func append(to out: inout [UInt8]) {
    switch self {
    case .string(let text): JSONValue.appendString(text, to: &out)
    case .int(let value): out.append(contentsOf: String(value).utf8)
    case .double(let value): out.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
    case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
    case .null: out.append(contentsOf: "null".utf8)
    case .array(let items):
      out.append(UInt8(ascii: "["))
      for (index, item) in items.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        item.append(to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let pairs):
      out.append(UInt8(ascii: "{"))
      for (index, pair) in pairs.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        JSONValue.appendString(pair.0, to: &out)
        out.append(UInt8(ascii: ":"))
        pair.1.append(to: &out)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  /// Appends `text` as a JSON string literal: `"` and `\` escaped, control characters as
  /// `\n`, `\r`, `\t` or `\u00XX`, and U+2028 and U+2029 (valid in JSON, not in JavaScript
  /// source) as `\u2028` and `\u2029`. Runs of bytes that need no escape are copied whole.
  package static func appendString(_ text: String, to out: inout [UInt8]) {
    var text = text
    text.withUTF8 { appendString(utf8: $0, to: &out) }
  }

  /// ``appendString(_:to:)`` for text given as its UTF-8 bytes (valid UTF-8).
  package static func appendString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    var start = 0
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
      let lineSeparator =
        (byte == 0xA8 || byte == 0xA9) && index >= 2 && bytes[index - 2] == 0xE2
        && bytes[index - 1] == 0x80
      guard
        byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20
          || lineSeparator
      else {
        index += 1
        continue
      }
      // The run before this byte (without the E2 80 of a line separator, which it
      // replaces: those two bytes never need an escape, so the run holds them).
      let end = lineSeparator ? index - 2 : index
      out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end]))
      out.append(UInt8(ascii: "\\"))
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
      case UInt8(ascii: "\n"): out.append(UInt8(ascii: "n"))
      case UInt8(ascii: "\r"): out.append(UInt8(ascii: "r"))
      case UInt8(ascii: "\t"): out.append(UInt8(ascii: "t"))
      case 0xA8, 0xA9:  // only as the end of a line separator (the guard above)
        out.append(contentsOf: "u202".utf8)
        out.append(byte == 0xA8 ? UInt8(ascii: "8") : UInt8(ascii: "9"))
      default:
        out.append(contentsOf: "u00".utf8)
        out.append(hexDigit(byte >> 4))
        out.append(hexDigit(byte & 15))
      }
      index += 1
      start = index
    }
    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<bytes.count]))
    out.append(UInt8(ascii: "\""))
  }

  /// A lowercase hexadecimal digit for `nibble` (0–15).
  private static func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
  }
}
