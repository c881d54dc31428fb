import Foundation

/// The API key, in a box whose every textual form is `<redacted>`, so that even a mirror
/// that walks the client's storage cannot print it.
struct APIKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
  CustomReflectable
{
  /// The key itself, for the `x-api-key` header only.
  let value: String

  /// A key from `text`, trimmed; `nil` when `text` is `nil`, blank, or holds characters that
  /// cannot go in an HTTP header (control characters, which could split the request).
  init?(_ text: String?) {
    guard let text else { return nil }
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !trimmed.isEmpty,
      trimmed.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
    else { return nil }
    value = trimmed
  }

  var description: String { "<redacted>" }
  var debugDescription: String { "<redacted>" }
  var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

  static func describe(_ key: APIKey?) -> String { key == nil ? "<none>" : "<redacted>" }
}
