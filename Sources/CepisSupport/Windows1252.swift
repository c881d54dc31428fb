/// Windows-1252, the single-byte encoding Excel saves "CSV" in on a Brazilian Windows: ASCII,
/// 27 typographic characters at 0x80–0x9F (`€`, `“`, `–`, …) and Latin-1 at 0xA0–0xFF.
/// Five bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D) are no character at all.
///
/// Files labelled Latin-1 / ISO-8859-1 are read the same way: in real files 0x80–0x9F are
/// Windows-1252's characters, never the C1 control codes ISO-8859-1 puts there.
package enum Windows1252 {
  /// The scalars of 0x80–0x9F; 0 marks the five undefined bytes.
  private static let high: [UInt32] = [
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
    0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
  ]

  /// Whether `byte` is a character of Windows-1252 (all but five bytes are).
  @inline(__always)
  package static func isDefined(_ byte: UInt8) -> Bool {
    byte < 0x80 || byte >= 0xA0 || high[Int(byte - 0x80)] != 0
  }

  /// The first byte of `bytes` that is no Windows-1252 character, or `nil`.
  package static func firstUndefined(in bytes: some Sequence<UInt8>) -> UInt8? {
    bytes.first { !isDefined($0) }
  }

  /// The character `byte` stands for, or `nil` for the five undefined bytes.
  @inline(__always)
  static func scalar(_ byte: UInt8) -> Unicode.Scalar? {
    if byte < 0x80 || byte >= 0xA0 { return Unicode.Scalar(byte) }
    let value = high[Int(byte - 0x80)]
    return value == 0 ? nil : Unicode.Scalar(value)
  }

  /// `bytes` decoded, or `nil` when one of them is undefined.
  package static func decode(_ bytes: some Sequence<UInt8>) -> String? {
    var text = ""
    text.unicodeScalars.reserveCapacity(bytes.underestimatedCount)
    for byte in bytes {
      guard let scalar = scalar(byte) else { return nil }
      text.unicodeScalars.append(scalar)
    }
    return text
  }

  /// Appends the UTF-8 of Windows-1252 `bytes` to `out`; an undefined byte (which the reader
  /// refuses before any row gets here) becomes U+FFFD.
  package static func appendUTF8(of bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
    for byte in bytes {
      if byte < 0x80 {
        out.append(byte)
        continue
      }
      UTF8.encode(scalar(byte) ?? "\u{FFFD}") { out.append($0) }
    }
  }

  /// The byte that stands for `scalar`, or `nil` when Windows-1252 has no such character.
  package static func byte(for scalar: Unicode.Scalar) -> UInt8? {
    let value = scalar.value
    if value < 0x80 || (value >= 0xA0 && value <= 0xFF) { return UInt8(value) }
    guard let index = high.firstIndex(of: value), value != 0 else { return nil }
    return UInt8(0x80 + index)
  }

  /// Appends UTF-8 `bytes` encoded as Windows-1252 to `out`; `false` (with `out` left as it
  /// was) when a character cannot be written in Windows-1252 or the bytes are not UTF-8.
  package static func append(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) -> Bool
  {
    let mark = out.count
    var iterator = bytes.makeIterator()
    var decoder = UTF8()
    while true {
      switch decoder.decode(&iterator) {
      case .scalarValue(let scalar):
        guard let byte = byte(for: scalar) else {
          out.removeSubrange(mark...)
          return false
        }
        out.append(byte)
      case .emptyInput:
        return true
      case .error:
        out.removeSubrange(mark...)
        return false
      }
    }
  }
}
