import Foundation

/// Decoding helpers that tolerate the drift real servers show: numbers where strings are
/// expected, `null` or missing fields, integers written as decimals.
struct AnyKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }
  init(_ string: String) { self.stringValue = string }
  init?(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }
}

extension KeyedDecodingContainer where Key == AnyKey {
  /// The field as text: strings as they are, numbers and booleans spelled out, `""` when
  /// missing or `null`. Objects and arrays are a shape error.
  func lenientString(_ name: String) throws -> String {
    let key = AnyKey(name)
    guard contains(key), try !decodeNil(forKey: key) else { return "" }
    if let text = try? decode(String.self, forKey: key) { return text }
    if let integer = try? decode(Int64.self, forKey: key) { return String(integer) }
    if let number = try? decode(Double.self, forKey: key) {
      return number == number.rounded() && abs(number) < 1e15
        ? String(Int64(number)) : String(number)
    }
    if let flag = try? decode(Bool.self, forKey: key) { return flag ? "true" : "false" }
    throw DecodingError.typeMismatch(
      String.self,
      .init(codingPath: codingPath + [key], debugDescription: "expected a string or a number"))
  }

  /// The field as a number, accepting numeric strings; `nil` when missing or `null`.
  func lenientDouble(_ name: String) throws -> Double? {
    let key = AnyKey(name)
    guard contains(key), try !decodeNil(forKey: key) else { return nil }
    if let number = try? decode(Double.self, forKey: key) { return number }
    if let text = try? decode(String.self, forKey: key),
      let number = Double(text.trimmingCharacters(in: .whitespaces))
    {
      return number
    }
    throw DecodingError.typeMismatch(
      Double.self, .init(codingPath: codingPath + [key], debugDescription: "expected a number"))
  }

  /// The field as a boolean, accepting `1`/`0` and `"true"`/`"false"`; `nil` when missing.
  func lenientBool(_ name: String) throws -> Bool? {
    let key = AnyKey(name)
    guard contains(key), try !decodeNil(forKey: key) else { return nil }
    if let flag = try? decode(Bool.self, forKey: key) { return flag }
    if let number = try? decode(Int.self, forKey: key) { return number != 0 }
    if let text = try? decode(String.self, forKey: key) {
      switch text.lowercased() {
      case "true", "1", "ok", "yes": return true
      case "false", "0", "no": return false
      default: break
      }
    }
    throw DecodingError.typeMismatch(
      Bool.self, .init(codingPath: codingPath + [key], debugDescription: "expected a boolean"))
  }
}
