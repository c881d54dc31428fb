import Foundation

/// A fictitious person served by the cpfhub.io routes.
public struct MockPerson: Sendable, Hashable, Codable {
  /// The CPF, 11 digits with valid check digits.
  public var cpf: String
  /// The (fictitious) full name.
  public var name: String
  /// `M` or `F`.
  public var gender: String
  /// Day of birth (1–31).
  public var day: Int
  /// Month of birth (1–12).
  public var month: Int
  /// Year of birth.
  public var year: Int

  /// Creates a person.
  public init(cpf: String, name: String, gender: String, day: Int, month: Int, year: Int) {
    self.cpf = cpf
    self.name = name
    self.gender = gender
    self.day = day
    self.month = month
    self.year = year
  }

  /// The name in upper case, as cpfhub.io's `nameUpper`.
  public var nameUpper: String { name.uppercased() }

  /// The birth date as `dd/MM/yyyy`.
  public var birthDate: String {
    twoDigits(day) + "/" + twoDigits(month) + "/" + String(year)
  }
}

private func twoDigits(_ value: Int) -> String {
  value < 10 ? "0\(value)" : String(value)
}
