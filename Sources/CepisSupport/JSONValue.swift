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

  /// Appends `text` as a JSON string literal.
  package static func appendString(_ text: String, to out: inout [UInt8]) {
    let hex = Array("0123456789abcdef".utf8)
    out.append(UInt8(ascii: "\""))
    var previous: (UInt8, UInt8) = (0, 0)
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
      case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
      case UInt8(ascii: "\n"): out.append(contentsOf: [92, 110])
      case UInt8(ascii: "\r"): out.append(contentsOf: [92, 114])
      case UInt8(ascii: "\t"): out.append(contentsOf: [92, 116])
      case 0..<0x20:
        out.append(contentsOf: [92, 117, 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
      case 0xA8...0xA9 where previous == (0xE2, 0x80):
        // U+2028 and U+2029 (E2 80 A8/A9): valid in JSON, but not in JavaScript source.
        out.removeLast(2)
        out.append(contentsOf: Array(#"\u202"#.utf8) + [byte == 0xA8 ? 56 : 57])
      default: out.append(byte)
      }
      previous = (previous.1, byte)
    }
    out.append(UInt8(ascii: "\""))
  }
}
