import Foundation

/// Makes room in `body` for a response that declares `length` bytes, before its parts come,
/// so that it is not grown by doubling as they do (a batch answer is tens of kilobytes). Every
/// transport's collector calls it once, after refusing a length over its limit. A length that
/// lies costs address space only, and at most ``bodyReservationCap``: the body still grows
/// past it, up to the limit, as the parts come.
package func reserveDeclaredBody(_ body: inout Data, length: Int) {
  guard length > 0 else { return }
  body.reserveCapacity(min(length, bodyReservationCap))
}

/// The most room ``reserveDeclaredBody(_:length:)`` makes ahead of a body's parts.
package let bodyReservationCap = 4 << 20

/// The value of a `Content-Length` field (ASCII digits, spaces and tabs around them allowed), or
/// `nil` when it is not one. Bytes, not Foundation's trimming: this runs for every response.
func contentLength(_ field: String) -> Int? {
  var value = 0
  var digits = 0
  var trailing = false
  for byte in field.utf8 {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"):
      guard !trailing, digits < 18 else { return nil }
      value = value * 10 + Int(byte &- UInt8(ascii: "0"))
      digits += 1
    case 0x20, 0x09:
      if digits > 0 { trailing = true }
    default:
      return nil
    }
  }
  return digits > 0 ? value : nil
}

/// A complete response as the core hands it to a client module.
package struct HTTPResponse: Sendable, Equatable {
  /// The HTTP status code.
  package var status: Int
  /// Header fields, names lowercased.
  package var headers: [String: String]
  /// The body, never longer than the transport's cap.
  package var body: Data

  /// Creates a response.
  package init(status: Int, headers: [String: String], body: Data) {
    self.status = status
    self.headers = headers
    self.body = body
  }

  /// The value of header `name`, matched without regard to case.
  package func header(_ name: String) -> String? {
    headers[name.lowercased()]
  }

  /// The media type of `Content-Type`, lowercased and without parameters
  /// (`"application/json"`), or `nil` when the header is absent.
  package var mediaType: String? {
    guard let raw = header("content-type") else { return nil }
    // Bytes, not Foundation's `trimmingCharacters`, which costs microseconds on Linux for
    // every response of a bulk run.
    let type = raw.utf8.prefix { $0 != UInt8(ascii: ";") }
    let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
    let trimmed = type.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
    return String(decoding: trimmed, as: UTF8.self).lowercased()
  }

  /// Whether `Content-Type` names JSON (`application/json` or any `+json` type).
  package var isJSON: Bool {
    guard let type = mediaType else { return false }
    return type == "application/json" || type.hasSuffix("+json") || type == "text/json"
  }

  /// Whether the body looks like an HTML page, by its content type or its first bytes.
  package var looksLikeHTML: Bool {
    if let type = mediaType, type == "text/html" || type == "application/xhtml+xml" {
      return true
    }
    for byte in body.prefix(64)
    where !(byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09) {
      return byte == UInt8(ascii: "<")
    }
    return false
  }

  /// A short, printable preview of the body for error messages: at most `limit`
  /// characters, control characters replaced, never the whole of a large body.
  package func bodyPreview(limit: Int = 80) -> String {
    Self.preview(of: body, limit: limit)
  }

  /// A short, printable preview of `data` (see ``bodyPreview(limit:)``).
  package static func preview(of data: Data, limit: Int = 80) -> String {
    let head = String(decoding: data.prefix(limit * 4), as: UTF8.self)
    var result = ""
    var count = 0
    var lastWasSpace = false
    for character in head {
      if count >= limit { break }
      let isSpace = character.isWhitespace || character.isNewline
      if isSpace {
        if lastWasSpace { continue }
        result.append(" ")
      } else if character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .control }) {
        result.append("?")
      } else {
        result.append(character)
      }
      lastWasSpace = isSpace
      count += 1
    }
    let trimmed = result.trimmingCharacters(in: .whitespaces)
    return data.count > trimmed.utf8.count && count >= limit ? trimmed + "…" : trimmed
  }
}
