#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The kind of Brazilian document that a value or an error is about.
public enum DocumentKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// Cadastro de Pessoas Físicas: an individual taxpayer, 11 digits.
  case cpf
  /// Cadastro Nacional da Pessoa Jurídica: a company, 14 characters.
  case cnpj

  /// The document's acronym as printed on forms: `"CPF"` or `"CNPJ"`.
  public var acronym: String {
    switch self {
    case .cpf: return "CPF"
    case .cnpj: return "CNPJ"
    }
  }

  /// How many significant characters (digits, or letters and digits) the document has.
  public var length: Int {
    switch self {
    case .cpf: return 11
    case .cnpj: return 14
    }
  }
}

/// Why a text is not a valid ``CPF`` or ``CNPJ``.
///
/// The cases follow what the caller has to tell the user, not how the check failed
/// internally. No case ever carries the full document: the check-digit and
/// repeated-sequence cases carry its redacted form (``CPF/redacted`` or
/// ``CNPJ/redacted``), so an error can be logged or reported to a crash service
/// without leaking personal data.
///
/// ``message`` (and `description`) are English, for developers;
/// `errorDescription` (from `LocalizedError`) is Brazilian Portuguese, for end users:
///
/// ```swift
/// do {
///   _ = try CPF("390.533.447-06")
/// } catch let error as DocumentError {
///   print(error.message)           // CPF ***.533.447-** has check digits that do not match.
///   print(error.errorDescription!) // CPF inválido: dígitos verificadores não conferem.
/// }
/// ```
public enum DocumentError: Error, Sendable, Equatable {
  /// The text does not have the document's number of significant characters.
  ///
  /// Separators (`.`, `-`, `/` for a CNPJ) and whitespace are not counted.
  case wrongLength(DocumentKind, expected: Int, actual: Int)
  /// A character that cannot appear at that place of the document.
  ///
  /// `position` is 1-based and counts the characters of the text as given,
  /// separators and spaces included, so a form can point at it.
  case invalidCharacter(DocumentKind, Character, position: Int)
  /// The check digits do not match the rest of the document.
  ///
  /// `redacted` is the document's redacted form, never the full document.
  case checkDigitMismatch(DocumentKind, redacted: String)
  /// One character repeated over the whole document (such as `111.111.111-11`),
  /// which the Receita Federal never issues although its check digits pass.
  case repeatedSequence(DocumentKind, redacted: String)

  /// The kind of document the error is about.
  public var kind: DocumentKind {
    switch self {
    case .wrongLength(let kind, _, _),
      .invalidCharacter(let kind, _, _),
      .checkDigitMismatch(let kind, _),
      .repeatedSequence(let kind, _):
      return kind
    }
  }

  /// An English explanation for developers and logs; it never contains the full document.
  public var message: String {
    let name = kind.acronym
    switch self {
    case .wrongLength(_, let expected, let actual):
      let unit = kind == .cpf ? "digits" : "characters"
      return "\(name) must have \(expected) \(unit); found \(actual)."
    case .invalidCharacter(_, let character, let position):
      return "\(name) cannot have \(Self.quoted(character)) at position \(position)."
    case .checkDigitMismatch(_, let redacted):
      return "\(name) \(redacted) has check digits that do not match."
    case .repeatedSequence(_, let redacted):
      return "\(name) \(redacted) is a repeated-digit sequence, which is never issued."
    }
  }

  /// Quotes a character with its scalar values too, because the usual culprits
  /// (a non-breaking space, a full-width digit) look like valid input when printed.
  private static func quoted(_ character: Character) -> String {
    let scalars = character.unicodeScalars.map { scalar in
      let hex = String(scalar.value, radix: 16, uppercase: true)
      return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
    return "\"\(character)\" (\(scalars.joined(separator: " ")))"
  }
}

extension DocumentError: CustomStringConvertible {
  /// The same English text as ``message``.
  public var description: String { message }
}

extension DocumentError: LocalizedError {
  /// A Brazilian Portuguese sentence that an app can show to its user as is.
  ///
  /// For example `"CPF inválido: dígitos verificadores não conferem."`.
  public var errorDescription: String? {
    let name = kind.acronym
    switch self {
    case .wrongLength(_, let expected, let actual):
      let unit = kind == .cpf ? "dígitos" : "caracteres"
      return "\(name) inválido: deve ter \(expected) \(unit) (foram informados \(actual))."
    case .invalidCharacter(_, let character, let position):
      return "\(name) inválido: o caractere “\(character)” não é permitido na posição \(position)."
    case .checkDigitMismatch:
      return "\(name) inválido: dígitos verificadores não conferem."
    case .repeatedSequence:
      return "\(name) inválido: sequência de dígitos repetidos."
    }
  }
}
