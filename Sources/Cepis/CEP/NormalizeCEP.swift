import Foundation

/// Normalizes a CEP to its 8 ASCII digits.
///
/// Surrounding whitespace and newlines are trimmed; `-`, `.` and spaces are dropped; what
/// remains must be exactly eight ASCII digits. Arabic-Indic, full-width and other Unicode
/// digits are rejected, so nothing but `0`–`9` can ever reach a request URL.
///
/// ```swift
/// try normalizeCEP(" 01310-100 ")  // "01310100"
/// try normalizeCEP("1310-100")     // throws CepisError.invalidCEP
/// ```
///
/// - Throws: ``CepisError/invalidCEP(_:)`` with a message quoting the input.
public func normalizeCEP(_ value: String) throws -> String {
  if let digits = normalizedCEPDigits(value.utf8) {
    return digits
  }
  // Unicode whitespace around the CEP (a no-break space pasted from a web page) is trimmed
  // as well; the fast path above only knows ASCII whitespace.
  let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
  if trimmed.utf8.count != value.utf8.count, let digits = normalizedCEPDigits(trimmed.utf8) {
    return digits
  }
  throw CepisError.invalidCEP("invalid CEP \(quoted(value)): expected 8 digits, as in 01001-000")
}

/// The 8 digits of a CEP, or `nil` when `bytes` is not one (the same rules as
/// ``normalizeCEP(_:)`` for ASCII input, without an error or an allocation on failure).
func normalizedCEPDigits(_ bytes: some Collection<UInt8>) -> String? {
  cepNumber(bytes).map(cepString)
}

/// A CEP as a number (`01001000` → 1001000), or `nil` when `bytes` is not one: the same
/// rules as ``normalizeCEP(_:)`` for ASCII input. Bulk paths key CEPs by this number, which
/// hashes faster than a string and needs no allocation.
func cepNumber(_ bytes: some Collection<UInt8>) -> Int? {
  scannedCEPNumber(bytes)
}

/// ``cepNumber(_:)`` of bytes in memory (a bulk row's CEP, a batch answer's `cep` field):
/// the two spellings nearly every row has, eight digits (`01001000`) and the masked
/// `01001-000`, are read eight bytes at a time; anything else is scanned byte by byte, as
/// ``cepNumber(_:)`` does (`CEPNumberTests` hold the two to the same answers).
@inline(__always)
func cepNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
  if let base = bytes.baseAddress {
    let raw = UnsafeRawPointer(base)
    if bytes.count == 8 {
      if let value = eightDigits(UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))) {
        return value
      }
    } else if bytes.count == 9 && base[5] == UInt8(ascii: "-") {
      // The five digits before the dash (bytes 0...4, loaded with the dash as the sixth) and
      // the three after it (bytes 6...8), put together as eight.
      let head = UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)) & 0xFF_FFFF_FFFF
      let tail =
        UInt64(base[6]) << 40 | UInt64(base[7]) << 48 | UInt64(base[8]) << 56
      if let value = eightDigits(head | tail) { return value }
    }
  }
  return scannedCEPNumber(bytes)
}

/// The number eight ASCII digits spell, the first in the lowest byte of `word`; `nil` when a
/// byte is not a digit. (Digits are `0x30...0x39`: each byte's high half is 3 and stays 3
/// when 6 is added to it.)
@inline(__always)
func eightDigits(_ word: UInt64) -> Int? {
  let high: UInt64 = 0xF0F0_F0F0_F0F0_F0F0
  let threes: UInt64 = 0x3030_3030_3030_3030
  guard word & high == threes, (word &+ 0x0606_0606_0606_0606) & high == threes else {
    return nil
  }
  // Each byte 0...9; then pairs (10 × first + second), then fours, then all eight.
  var value = word &- threes
  value = (value &* 10) &+ (value >> 8)
  value =
    ((value & 0x0000_00FF_0000_00FF) &* (100 &+ (1_000_000 << 32))
      &+ ((value >> 16) & 0x0000_00FF_0000_00FF) &* (1 &+ (10_000 << 32))) >> 32
  return Int(truncatingIfNeeded: value)
}

/// ``cepNumber(_:)``, one byte at a time.
func scannedCEPNumber(_ bytes: some Collection<UInt8>) -> Int? {
  var value = 0
  var count = 0
  var seenContent = false
  var inTrailingWhitespace = false
  for byte in bytes {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"):
      guard count < 8, !inTrailingWhitespace else { return nil }
      value = value &* 10 &+ Int(byte &- UInt8(ascii: "0"))
      count += 1
      seenContent = true
    case UInt8(ascii: "-"), UInt8(ascii: "."):
      guard !inTrailingWhitespace else { return nil }
      seenContent = true
    case UInt8(ascii: " "):
      continue
    case UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C:
      // Tabs and line breaks may surround the CEP but not split it.
      if seenContent { inTrailingWhitespace = true }
    default:
      return nil
    }
  }
  return count == 8 ? value : nil
}

/// ``cepNumber(_:)`` of a string's UTF-8 bytes, read in place (a CEP is a small string,
/// whose bytes are the string's own): the UTF-8 view's iterator costs several times as much
/// per byte, and every row of a bulk run comes through here.
@inline(__always)
func cepNumber(utf8Of text: String) -> Int? {
  text.utf8.withContiguousStorageIfAvailable { cepNumber($0) } ?? cepNumber(text.utf8)
}

/// The CEP number of an input field (`" 01001-000 "` → `1001000`), or `nil` when it is not a
/// CEP: the rules of ``normalizeCEP(_:)`` without building a string or an error.
package func cepNumber(ofField text: String) -> Int? {
  if let number = cepNumber(utf8Of: text) { return number }
  // Only non-ASCII whitespace (a no-break space pasted from a web page) can still make a CEP.
  guard text.utf8.contains(where: { $0 >= 0x80 }) else { return nil }
  return cepNumber(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
}

/// The 8-digit string of a CEP number (`1001000` → `"01001000"`).
package func cepString(_ number: Int) -> String {
  asciiString(capacity: 8) { buffer in
    writeCEPDigits(number, to: buffer, at: 0)
    return 8
  }
}

/// A string of at most `capacity` ASCII bytes that `initialize` writes and counts, written
/// straight into the string's own storage where the system has
/// `String(unsafeUninitializedCapacity:initializingUTF8With:)` (macOS 11, iOS 14, tvOS 14,
/// watchOS 7), through one temporary array before.
@inline(__always)
func asciiString(
  capacity: Int, _ initialize: (UnsafeMutableBufferPointer<UInt8>) -> Int
) -> String {
  if #available(macOS 11, iOS 14, tvOS 14, watchOS 7, *) {
    return String(unsafeUninitializedCapacity: capacity, initializingUTF8With: initialize)
  }
  var bytes = [UInt8](repeating: 0, count: capacity)
  let count = bytes.withUnsafeMutableBufferPointer { initialize($0) }
  return String(decoding: bytes[..<count], as: UTF8.self)
}

/// Writes the 8 digits of a CEP number (0...99,999,999) into `buffer` at `offset`
/// (`1001000` → `01001000`): ``cepString(_:)`` and a batch request's path
/// (`Client.batchPath`, a million CEPs in a bulk run). The digits are worked out in two
/// independent halves of four (not eight divisions in a chain) and stored in one 8-byte write.
func writeCEPDigits(_ number: Int, to buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
  precondition((0...99_999_999).contains(number), "not a CEP number: \(number)")
  precondition(offset >= 0 && offset + 8 <= buffer.count, "no room for 8 digits")
  // Four digits of `half` (0...9,999), one a byte, the first in the lowest byte.
  @inline(__always) func digits(_ half: UInt64) -> UInt64 {
    let high = half / 100
    let low = half % 100
    return high / 10 | (high % 10) << 8 | (low / 10) << 16 | (low % 10) << 24
  }
  let value = UInt64(number)
  let word = digits(value / 10_000) | digits(value % 10_000) << 32 | 0x3030_3030_3030_3030
  UnsafeMutableRawPointer(buffer.baseAddress! + offset)
    .storeBytes(of: word.littleEndian, as: UInt64.self)
}

/// The masked form people write, `NNNNN-NNN`, of an 8-digit CEP; anything else unchanged.
/// The client side's one CEP formatter: ``Address/formattedCEP`` and the command line's output
/// use it. (CepisMock keeps a formatter of its own on purpose: a server that shares the
/// client's code cannot catch the client's mistakes.)
package func maskedCEP(_ cep: String) -> String {
  guard cep.utf8.count == 8 else { return cep }
  return "\(cep.prefix(5))-\(cep.suffix(3))"
}

/// `value` in quotes for a message, shortened when long and with control characters shown
/// escaped, so that hostile input cannot forge log lines.
func quoted(_ value: String, limit: Int = 40) -> String {
  var result = ""
  var count = 0
  for scalar in value.unicodeScalars {
    if count >= limit {
      result += "…"
      break
    }
    result +=
      scalar.properties.generalCategory == .control ? scalar.escaped(asASCII: true) : String(scalar)
    count += 1
  }
  return "\"\(result)\""
}
