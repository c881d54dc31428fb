/// A valid CNPJ (Cadastro Nacional da Pessoa Jurídica), the registration number of a
/// company — numeric or in the alphanumeric format introduced for July 2026.
///
/// The first 12 places (8 of root, 4 of branch) are `0-9` or `A-Z`; the last 2 are
/// numeric check digits computed from the characters' ASCII codes minus 48, as in
/// IN RFB nº 2.229/2024. A numeric CNPJ is the special case with no letters, so one
/// rule validates both formats.
///
/// ```swift
/// let cnpj = try CNPJ("12.abc.345/01de-35")
/// cnpj.value           // "12ABC34501DE35"
/// cnpj.formatted       // "12.ABC.345/01DE-35"
/// cnpj.root            // "12ABC345"
/// cnpj.branch          // "01DE"
/// cnpj.isAlphanumeric  // true
/// CNPJ.isValid("11.222.333/0001-81")  // true
/// ```
///
/// A CNPJ identifies a company, not a person, so unlike ``CPF`` its `description`
/// is the full ``formatted`` value; ``redacted`` is still there for errors.
///
/// The Receita's scheme has a blind spot worth knowing when you rely on it to catch
/// typing errors: a character's value is its ASCII code minus 48, and mod 11 cannot
/// tell values 11 apart, so swapping `6` for `A`, `7` for `B`, `8` for `C`, `9` for
/// `D`, or `A` for `L` or `W` in the first 12 places leaves both check digits
/// unchanged. `11.444.777/0001-61` and `11.444.B77/0001-61` are both valid.
public struct CNPJ: Sendable, Hashable {
  /// The fourteen characters, uppercase and without separators: `"12ABC34501DE35"`.
  public let value: String

  /// Parses and validates a CNPJ.
  ///
  /// Accepts the characters alone or formatted (`12.ABC.345/01DE-35`); `.`, `/`, `-`
  /// and whitespace are ignored wherever they are, and lowercase letters are stored
  /// uppercase.
  ///
  /// ```swift
  /// let cnpj = try CNPJ("11.222.333/0001-81")
  /// ```
  ///
  /// - Throws: ``DocumentError`` with kind ``DocumentKind/cnpj``, by cause: wrong
  ///   number of characters, a character that cannot appear (a symbol anywhere, or a
  ///   letter in a check-digit place; with its position), check digits that do not
  ///   match, or one character repeated 14 times.
  public init(_ text: String) throws(DocumentError) {
    var buffer = InlineBytes()
    if let failure = Scanner.scanCNPJ(text.utf8, into: &buffer) {
      throw Self.error(for: failure, in: text, scanned: buffer)
    }
    value = buffer.string
  }

  /// Whether `text` is a valid CNPJ, numeric or alphanumeric, with the rules of
  /// ``init(_:)``.
  ///
  /// Works over the UTF-8 bytes in one pass and never allocates.
  ///
  /// ```swift
  /// CNPJ.isValid("12ABC34501DE35")  // true
  /// CNPJ.isValid("12ABC34501DE36")  // false
  /// ```
  public static func isValid(_ text: String) -> Bool {
    var buffer = InlineBytes()
    return Scanner.scanCNPJ(text.utf8, into: &buffer) == nil
  }

  /// Whether the UTF-8 bytes hold a valid CNPJ, for bulk paths (a CSV column, a
  /// network buffer) that should not build a `String` per field.
  public static func isValid<Bytes: Collection<UInt8>>(utf8 bytes: Bytes) -> Bool {
    var buffer = InlineBytes()
    return Scanner.scanCNPJ(bytes, into: &buffer) == nil
  }

  /// Whether contiguous UTF-8 bytes hold a valid CNPJ. Concrete overloads, so that callers
  /// in other modules run specialized code instead of the generic entry point.
  public static func isValid(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var buffer = InlineBytes()
    return Scanner.scanCNPJ(bytes, into: &buffer) == nil
  }

  /// Whether the UTF-8 bytes hold a valid CNPJ (concrete overload, see above).
  public static func isValid(utf8 bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBufferPointer { isValid(utf8: $0) }
  }

  /// Whether the UTF-8 bytes hold a valid CNPJ (concrete overload, see above).
  public static func isValid(utf8 bytes: ArraySlice<UInt8>) -> Bool {
    bytes.withUnsafeBufferPointer { isValid(utf8: $0) }
  }

  /// The CNPJ in its usual written form: `"12.ABC.345/01DE-35"`.
  public var formatted: String {
    let characters = Array(value)
    return "\(String(characters[0..<2])).\(String(characters[2..<5]))."
      + "\(String(characters[5..<8]))/\(String(characters[8..<12]))-"
      + String(characters[12..<14])
  }

  /// The form used in errors, hiding the first two characters and the check digits
  /// like ``CPF/redacted``: `"**.ABC.345/01DE-**"`.
  public var redacted: String { Self.redact(value) }

  /// The eight-character root that identifies the company: `"12ABC345"`.
  public var root: String { String(value.prefix(8)) }

  /// The four-character branch (ordem do estabelecimento): `"0001"` for the headquarters.
  public var branch: String { String(value.dropFirst(8).prefix(4)) }

  /// The two check digits: `"35"`.
  public var checkDigits: String { String(value.suffix(2)) }

  /// Whether this is the company's headquarters (matriz), whose branch is `0001`.
  public var isHeadquarters: Bool { branch == "0001" }

  /// Whether the CNPJ has at least one letter (the format introduced for July 2026).
  public var isAlphanumeric: Bool {
    value.utf8.contains { $0 >= UInt8(ascii: "A") }
  }

  /// A random valid CNPJ, for test fixtures; its branch is never `0000`.
  ///
  /// ```swift
  /// var generator = SystemRandomNumberGenerator()
  /// let newFormat = CNPJ.random(alphanumeric: true, using: &generator)
  /// newFormat.isAlphanumeric  // true
  /// ```
  ///
  /// - Parameters:
  ///   - alphanumeric: `true` for the new format, with at least one letter among the
  ///     first 12 characters; `false` for digits only.
  ///   - generator: The source of randomness; a seeded one gives repeatable fixtures.
  public static func random(
    alphanumeric: Bool = false, using generator: inout some RandomNumberGenerator
  ) -> CNPJ {
    let alphabet: StaticString = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    let choices = alphanumeric ? 36 : 10
    while true {
      var bytes = InlineBytes()
      var first = 0
      var second = 0
      var hasLetter = false
      for index in 0..<12 {
        let byte = alphabet.withUTF8Buffer { $0[Int.random(in: 0..<choices, using: &generator)] }
        hasLetter = hasLetter || byte >= UInt8(ascii: "A")
        let value = Int(byte - UInt8(ascii: "0"))
        first += value * Scanner.cnpjWeight(distance: 11 - index)
        second += value * Scanner.cnpjWeight(distance: 12 - index)
        bytes.append(byte)
      }
      let thirteenth = Scanner.checkDigit(first)
      let fourteenth = Scanner.checkDigit(second + thirteenth * 2)
      bytes.append(UInt8(ascii: "0") + UInt8(thirteenth))
      bytes.append(UInt8(ascii: "0") + UInt8(fourteenth))
      // Redraw rather than bias the draw: a letterless "alphanumeric" fixture would
      // not exercise the new format, and branch 0000 is never issued.
      guard alphanumeric == hasLetter, let cnpj = try? CNPJ(bytes.string),
        cnpj.branch != "0000"
      else { continue }
      return cnpj
    }
  }

  /// A random valid CNPJ drawn with the system's generator; see
  /// ``random(alphanumeric:using:)``.
  ///
  /// ```swift
  /// let fixture = CNPJ.random(alphanumeric: true)
  /// ```
  public static func random(alphanumeric: Bool = false) -> CNPJ {
    var generator = SystemRandomNumberGenerator()
    return random(alphanumeric: alphanumeric, using: &generator)
  }

  private static func error(
    for failure: ScanFailure, in text: String, scanned: InlineBytes
  ) -> DocumentError {
    switch failure {
    case .invalidByte(let offset):
      let (character, position) = Scanner.character(in: text, atUTF8Offset: offset)
      return .invalidCharacter(.cnpj, character, position: position)
    case .wrongLength(let count):
      return .wrongLength(.cnpj, expected: 14, actual: count)
    case .checkDigitMismatch:
      return .checkDigitMismatch(.cnpj, redacted: redact(scanned.string))
    case .repeatedSequence:
      return .repeatedSequence(.cnpj, redacted: redact(scanned.string))
    }
  }

  private static func redact(_ value: String) -> String {
    let characters = Array(value)
    return "**.\(String(characters[2..<5])).\(String(characters[5..<8]))/"
      + "\(String(characters[8..<12]))-**"
  }
}

extension CNPJ: CustomStringConvertible {
  /// The ``formatted`` value: a CNPJ is public company data, not personal data.
  public var description: String { formatted }
}

extension CNPJ: CustomDebugStringConvertible {
  /// `CNPJ(12.ABC.345/01DE-35)`.
  public var debugDescription: String { "CNPJ(\(formatted))" }
}

extension CNPJ: CustomReflectable {
  /// A mirror with the formatted value as its only child, matching `description`.
  public var customMirror: Mirror {
    Mirror(self, children: ["formatted": formatted], displayStyle: .struct)
  }
}

extension CNPJ: Codable {
  /// Decodes a CNPJ from a single string (bare or formatted, any letter case),
  /// rejecting an invalid one with `DecodingError.dataCorrupted` whose underlying
  /// error is the ``DocumentError``.
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

  /// Encodes the CNPJ as a single string of its fourteen characters, uppercase.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(value)
  }
}
