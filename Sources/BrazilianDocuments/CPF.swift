/// A valid CPF (Cadastro de Pessoas Físicas), the taxpayer number of a person.
///
/// Creating one checks everything that can be checked offline: eleven digits, both
/// check digits, and not a repeated-digit sequence.
///
/// ```swift
/// let cpf = try CPF("390.533.447-05")
/// cpf.digits        // "39053344705"
/// cpf.formatted     // "390.533.447-05"
/// cpf.redacted      // "***.533.447-**"
/// cpf.fiscalRegion  // .seventh (ES, RJ)
/// CPF.isValid("123.456.789-00")  // false
/// ```
///
/// ## Privacy
///
/// A CPF is personal data under Brazil's LGPD (Lei 13.709/2018), so this type never
/// prints it by accident: `description`, `debugDescription`, string interpolation,
/// `print`, `dump` and `Mirror` all show only ``redacted``. Ask for ``digits`` or
/// ``formatted`` explicitly where the full number is meant to go (a request body, a
/// field the user is editing). Encoding is the exception: `Codable` writes the digits,
/// because that is what the value is for.
public struct CPF: Sendable, Hashable {
  /// The eleven digits, without separators: `"39053344705"`.
  public let digits: String

  /// Parses and validates a CPF.
  ///
  /// Accepts the digits alone or formatted (`390.533.447-05`); `.`, `-` and
  /// whitespace are ignored wherever they are, so surrounding spaces are fine.
  ///
  /// ```swift
  /// let cpf = try CPF(" 390.533.447-05 ")
  /// ```
  ///
  /// - Throws: ``DocumentError`` with kind ``DocumentKind/cpf``, by cause: wrong number
  ///   of digits, a character that cannot appear (with its position), check digits that
  ///   do not match, or a repeated-digit sequence such as `111.111.111-11`.
  public init(_ text: String) throws(DocumentError) {
    var buffer = InlineBytes()
    if let failure = Scanner.scanCPF(text.utf8, into: &buffer) {
      throw Self.error(for: failure, in: text, scanned: buffer)
    }
    digits = buffer.string
  }

  /// Whether `text` is a valid CPF, with the rules of ``init(_:)``.
  ///
  /// Works over the UTF-8 bytes in one pass and never allocates.
  ///
  /// ```swift
  /// CPF.isValid("390.533.447-05")  // true
  /// CPF.isValid("111.111.111-11")  // false
  /// ```
  public static func isValid(_ text: String) -> Bool {
    var buffer = InlineBytes()
    return Scanner.scanCPF(text.utf8, into: &buffer) == nil
  }

  /// Whether the UTF-8 bytes hold a valid CPF, for bulk paths (a CSV column, a
  /// network buffer) that should not build a `String` per field.
  public static func isValid<Bytes: Collection<UInt8>>(utf8 bytes: Bytes) -> Bool {
    var buffer = InlineBytes()
    return Scanner.scanCPF(bytes, into: &buffer) == nil
  }

  /// Whether contiguous UTF-8 bytes hold a valid CPF. Concrete overloads, so that callers
  /// in other modules run specialized code instead of the generic entry point.
  public static func isValid(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var buffer = InlineBytes()
    return Scanner.scanCPF(bytes, into: &buffer) == nil
  }

  /// Whether the UTF-8 bytes hold a valid CPF (concrete overload, see above).
  public static func isValid(utf8 bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBufferPointer { isValid(utf8: $0) }
  }

  /// Whether the UTF-8 bytes hold a valid CPF (concrete overload, see above).
  public static func isValid(utf8 bytes: ArraySlice<UInt8>) -> Bool {
    bytes.withUnsafeBufferPointer { isValid(utf8: $0) }
  }

  /// The CPF in its usual written form: `"390.533.447-05"`.
  public var formatted: String {
    let characters = Array(digits)
    return "\(String(characters[0..<3])).\(String(characters[3..<6]))."
      + "\(String(characters[6..<9]))-\(String(characters[9..<11]))"
  }

  /// The form to use in logs, errors and screens that need not show the whole
  /// number: `"***.533.447-**"`, the masking used by the federal Portal da Transparência.
  public var redacted: String {
    let characters = Array(digits)
    return "***.\(String(characters[3..<6])).\(String(characters[6..<9]))-**"
  }

  /// The fiscal region that issued the CPF, named by its 9th digit.
  public var fiscalRegion: FiscalRegion {
    let ninth = digits.utf8.dropFirst(8).first ?? UInt8(ascii: "0")
    // A stored CPF has only ASCII digits, so the subtraction cannot fail.
    return FiscalRegion(digit: Int(ninth &- UInt8(ascii: "0"))) ?? .tenth
  }

  /// A random valid CPF, for test fixtures; never a repeated-digit sequence.
  ///
  /// ```swift
  /// var generator = SystemRandomNumberGenerator()
  /// let paulista = CPF.random(region: .eighth, using: &generator)
  /// ```
  ///
  /// - Parameters:
  ///   - region: The fiscal region whose digit goes in 9th place, or `nil` for any.
  ///   - generator: The source of randomness; a seeded one gives repeatable fixtures.
  public static func random(
    region: FiscalRegion? = nil, using generator: inout some RandomNumberGenerator
  ) -> CPF {
    while true {
      var bytes = InlineBytes()
      var first = 0
      var second = 0
      for index in 0..<9 {
        let value: Int
        if index == 8, let region {
          value = region.digit
        } else {
          value = Int.random(in: 0...9, using: &generator)
        }
        first += value * (10 - index)
        second += value * (11 - index)
        bytes.append(UInt8(ascii: "0") + UInt8(value))
      }
      let tenth = Scanner.checkDigit(first)
      let eleventh = Scanner.checkDigit(second + tenth * 2)
      bytes.append(UInt8(ascii: "0") + UInt8(tenth))
      bytes.append(UInt8(ascii: "0") + UInt8(eleventh))
      // Only a repeated sequence can fail here; drawing again is simpler than
      // steering the generator away from it.
      if let cpf = try? CPF(bytes.string) { return cpf }
    }
  }

  /// The two check digits that follow `base`, a CPF's first nine digits (each `0...9`), by the
  /// mod-11 rule ``init(_:)`` checks.
  ///
  /// `package`: the one implementation CepisMock's sample people are built with.
  package static func checkDigits(base: [Int]) -> (tenth: Int, eleventh: Int) {
    var first = 0
    var second = 0
    for (index, value) in base.prefix(9).enumerated() {
      first += value * (10 - index)
      second += value * (11 - index)
    }
    let tenth = Scanner.checkDigit(first)
    return (tenth, Scanner.checkDigit(second + tenth * 2))
  }

  /// A random valid CPF drawn with the system's generator; see
  /// ``random(region:using:)``.
  ///
  /// ```swift
  /// let fixture = CPF.random()
  /// ```
  public static func random(region: FiscalRegion? = nil) -> CPF {
    var generator = SystemRandomNumberGenerator()
    return random(region: region, using: &generator)
  }

  private static func error(
    for failure: ScanFailure, in text: String, scanned: InlineBytes
  ) -> DocumentError {
    switch failure {
    case .invalidByte(let offset):
      let (character, position) = Scanner.character(in: text, atUTF8Offset: offset)
      return .invalidCharacter(.cpf, character, position: position)
    case .wrongLength(let count):
      return .wrongLength(.cpf, expected: 11, actual: count)
    case .checkDigitMismatch:
      return .checkDigitMismatch(.cpf, redacted: redact(scanned.string))
    case .repeatedSequence:
      return .repeatedSequence(.cpf, redacted: redact(scanned.string))
    }
  }

  private static func redact(_ digits: String) -> String {
    let characters = Array(digits)
    return "***.\(String(characters[3..<6])).\(String(characters[6..<9]))-**"
  }
}

extension CPF: CustomStringConvertible {
  /// The redacted form, `"***.533.447-**"`, so that printing or interpolating a CPF
  /// never leaks it; use ``formatted`` or ``digits`` for the full number.
  public var description: String { redacted }
}

extension CPF: CustomDebugStringConvertible {
  /// `CPF(***.533.447-**)`: redacted too, as debuggers and `dump` show this.
  public var debugDescription: String { "CPF(\(redacted))" }
}

extension CPF: CustomReflectable {
  /// A mirror with only the redacted form, so `dump`, `Mirror` and test-failure
  /// output never reveal the digits.
  public var customMirror: Mirror {
    Mirror(self, children: ["redacted": redacted], displayStyle: .struct)
  }
}

extension CPF: Codable {
  /// Decodes a CPF from a single string (digits or formatted), rejecting an invalid one
  /// with `DecodingError.dataCorrupted` whose underlying error is the ``DocumentError``.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    let text = try container.decode(String.self)
    do {
      try self.init(text)
    } catch {
      throw DecodingError.dataCorrupted(
        DecodingError.Context(
          codingPath: decoder.codingPath, debugDescription: error.message,
          underlyingError: error))
    }
  }

  /// Encodes the CPF as a single string of its eleven digits.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(digits)
  }
}
