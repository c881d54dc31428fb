/// Up to 16 normalized ASCII bytes kept inline, so parsing and validation never
/// touch the heap: a tuple lives on the stack, unlike an `Array`.
struct InlineBytes {
  private var storage: (UInt64, UInt64) = (0, 0)
  private(set) var count = 0

  mutating func append(_ byte: UInt8) {
    withUnsafeMutableBytes(of: &storage) { $0[count] = byte }
    count += 1
  }

  subscript(index: Int) -> UInt8 {
    withUnsafeBytes(of: storage) { $0[index] }
  }

  /// Builds the String once per accepted document; up to 15 ASCII bytes it is a
  /// small string stored inside the `String` value itself.
  var string: String {
    withUnsafeBytes(of: storage) { String(decoding: $0.prefix(count), as: UTF8.self) }
  }
}

/// Why a scan rejected its input, without any `String` so that `isValid` stays
/// allocation-free; the throwing initializers turn it into a ``DocumentError``.
enum ScanFailure: Equatable {
  /// `offset` counts UTF-8 bytes from the start of the input.
  case invalidByte(offset: Int)
  case wrongLength(Int)
  case checkDigitMismatch
  case repeatedSequence
}

enum Scanner {
  static func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// Scans a CPF in one pass: digits with `.`, `-` and whitespace ignored anywhere.
  static func scanCPF<Bytes: Collection<UInt8>>(
    _ bytes: Bytes, into digits: inout InlineBytes
  ) -> ScanFailure? {
    var count = 0
    var offset = 0
    var first = 0
    var second = 0
    var allSame = true
    for byte in bytes {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        if count < 11 {
          let value = Int(byte &- UInt8(ascii: "0"))
          if count < 9 {
            first += value * (10 - count)
            second += value * (11 - count)
          } else if count == 9 {
            second += value * 2
          }
          if count > 0 && byte != digits[0] { allSame = false }
          digits.append(byte)
        }
        count += 1
      case UInt8(ascii: "."), UInt8(ascii: "-"):
        break
      default:
        if !isWhitespace(byte) { return .invalidByte(offset: offset) }
      }
      offset += 1
    }
    guard count == 11 else { return .wrongLength(count) }
    // Checked before the check digits: every repeated sequence passes them.
    if allSame { return .repeatedSequence }
    guard
      Int(digits[9] &- UInt8(ascii: "0")) == checkDigit(first),
      Int(digits[10] &- UInt8(ascii: "0")) == checkDigit(second)
    else { return .checkDigitMismatch }
    return nil
  }

  /// Scans a CNPJ in one pass: letters (folded to uppercase) and digits in the first
  /// 12 places, digits in the last 2, with `.`, `/`, `-` and whitespace ignored anywhere.
  static func scanCNPJ<Bytes: Collection<UInt8>>(
    _ bytes: Bytes, into characters: inout InlineBytes
  ) -> ScanFailure? {
    var count = 0
    var offset = 0
    var first = 0
    var second = 0
    var allSame = true
    for byte in bytes {
      var upper = byte
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        break
      case UInt8(ascii: "A")...UInt8(ascii: "Z"):
        if count == 12 || count == 13 { return .invalidByte(offset: offset) }
      case UInt8(ascii: "a")...UInt8(ascii: "z"):
        if count == 12 || count == 13 { return .invalidByte(offset: offset) }
        upper = byte &- 0x20
      case UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: "-"):
        offset += 1
        continue
      default:
        if !isWhitespace(byte) { return .invalidByte(offset: offset) }
        offset += 1
        continue
      }
      if count < 14 {
        // The Receita's rule for both formats: a character is worth its ASCII code
        // minus 48, so digits keep their value and `A` is 17.
        let value = Int(upper &- UInt8(ascii: "0"))
        if count < 12 {
          first += value * cnpjWeight(distance: 11 - count)
          second += value * cnpjWeight(distance: 12 - count)
        } else if count == 12 {
          second += value * 2
        }
        if count > 0 && upper != characters[0] { allSame = false }
        characters.append(upper)
      }
      count += 1
      offset += 1
    }
    guard count == 14 else { return .wrongLength(count) }
    // Before the check digits, so 00.000.000/0000-00 (which passes them) is named for what it is.
    if allSame { return .repeatedSequence }
    guard
      Int(characters[12] &- UInt8(ascii: "0")) == checkDigit(first),
      Int(characters[13] &- UInt8(ascii: "0")) == checkDigit(second)
    else { return .checkDigitMismatch }
    return nil
  }

  /// The CNPJ weight of a character `distance` places left of the last weighted one:
  /// 2, 3, …, 9, then 2 again. Arithmetic rather than a table, so the hot loop reads
  /// no memory; for 12 characters it yields 5,4,3,2,9,8,7,6,5,4,3,2.
  @inline(__always)
  static func cnpjWeight(distance: Int) -> Int {
    distance % 8 + 2
  }

  /// The mod-11 rule shared by CPF and CNPJ.
  @inline(__always)
  static func checkDigit(_ sum: Int) -> Int {
    let remainder = sum % 11
    return remainder < 2 ? 0 : 11 - remainder
  }

  /// Finds the character containing the byte at `offset`, and its 1-based position,
  /// for error messages only (the slow path).
  static func character(in text: String, atUTF8Offset offset: Int) -> (Character, Int) {
    let utf8 = text.utf8
    let target = utf8.index(utf8.startIndex, offsetBy: offset)
    var index = text.startIndex
    var position = 1
    while index < text.endIndex {
      let next = text.index(after: index)
      if target < next { return (text[index], position) }
      index = next
      position += 1
    }
    // Unreachable for offsets produced by a scan of `text.utf8`; kept total anyway.
    return (" ", position)
  }
}
