import BrazilianDocuments
import Foundation

/// The person cpfhub.io returns for a CPF: the `data` object of its response.
///
/// The stored properties are what the API sends, under the same names; ``birthDateComponents``
/// is the birth date as a typed value. ``cpf`` is a `BrazilianDocuments.CPF`, so printing or
/// dumping a `Person` shows only the redacted CPF.
///
/// ```swift
/// let person = try await client.lookup("390.533.447-05")
/// person.name                      // "Maria da Silva"
/// person.birthDate                 // "15/06/1990"
/// person.birthDateComponents.year  // 1990
/// ```
public struct Person: Sendable, Hashable, Codable {
  /// The person's CPF (encoded as its eleven digits).
  public var cpf: CPF
  /// The full name, as registered.
  public var name: String
  /// The full name in capitals, as the API sends it.
  public var nameUpper: String
  /// The gender code the API sends (`"M"` or `"F"`); empty when the API sends none.
  public var gender: String
  /// The birth date as the API sends it, `"dd/MM/yyyy"`.
  public var birthDate: String
  /// The day of the month of the birth date.
  public var day: Int
  /// The month of the birth date, 1 to 12.
  public var month: Int
  /// The year of the birth date.
  public var year: Int

  /// Creates a person; `day`, `month` and `year` should agree with `birthDate`.
  public init(
    cpf: CPF, name: String, nameUpper: String, gender: String, birthDate: String, day: Int,
    month: Int, year: Int
  ) {
    self.cpf = cpf
    self.name = name
    self.nameUpper = nameUpper
    self.gender = gender
    self.birthDate = birthDate
    self.day = day
    self.month = month
    self.year = year
  }

  /// The birth date as Gregorian year, month and day (no time, no time zone).
  public var birthDateComponents: DateComponents {
    DateComponents(
      calendar: Calendar(identifier: .gregorian), year: year, month: month, day: day)
  }

  private enum CodingKeys: String, CodingKey {
    case cpf, name, nameUpper, gender, birthDate, day, month, year
  }

  /// Decodes the API's `data` object.
  ///
  /// `day`, `month` and `year` are accepted as numbers or numeric strings, and taken from
  /// `birthDate` when absent; a `birthDate` that is not a real `dd/MM/yyyy` date, or that
  /// disagrees with them, is a `DecodingError`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    cpf = try container.decode(CPF.self, forKey: .cpf)
    name = try container.decode(String.self, forKey: .name)
    nameUpper = try container.decodeIfPresent(String.self, forKey: .nameUpper) ?? name.uppercased()
    gender = try container.decodeIfPresent(String.self, forKey: .gender) ?? ""
    birthDate = try container.decode(String.self, forKey: .birthDate)
    guard let parsed = Self.parseDate(birthDate) else {
      throw DecodingError.dataCorruptedError(
        forKey: .birthDate, in: container, debugDescription: "birthDate is not dd/MM/yyyy")
    }
    day = try Self.flexibleInt(container, .day) ?? parsed.day
    month = try Self.flexibleInt(container, .month) ?? parsed.month
    year = try Self.flexibleInt(container, .year) ?? parsed.year
    guard (day, month, year) == parsed else {
      throw DecodingError.dataCorruptedError(
        forKey: .birthDate, in: container,
        debugDescription: "birthDate disagrees with day, month and year")
    }
  }

  /// Encodes the fields under the API's names, `cpf` as eleven digits.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(cpf, forKey: .cpf)
    try container.encode(name, forKey: .name)
    try container.encode(nameUpper, forKey: .nameUpper)
    try container.encode(gender, forKey: .gender)
    try container.encode(birthDate, forKey: .birthDate)
    try container.encode(day, forKey: .day)
    try container.encode(month, forKey: .month)
    try container.encode(year, forKey: .year)
  }

  private static func flexibleInt(
    _ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys
  ) throws -> Int? {
    if let value = try? container.decodeIfPresent(Int.self, forKey: key) { return value }
    if let text = try? container.decodeIfPresent(String.self, forKey: key) {
      guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
        throw DecodingError.dataCorruptedError(
          forKey: key, in: container, debugDescription: "not a number")
      }
      return value
    }
    return nil
  }

  /// Parses `dd/MM/yyyy` strictly: two-digit day and month, four-digit year, a real date.
  static func parseDate(_ text: String) -> (day: Int, month: Int, year: Int)? {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0].utf8.count == 2, parts[1].utf8.count == 2,
      parts[2].utf8.count == 4,
      parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
      let day = Int(parts[0]), let month = Int(parts[1]), let year = Int(parts[2]),
      (1...12).contains(month), day >= 1, day <= daysInMonth(month, year)
    else { return nil }
    return (day, month, year)
  }

  private static func daysInMonth(_ month: Int, _ year: Int) -> Int {
    switch month {
    case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }
}
