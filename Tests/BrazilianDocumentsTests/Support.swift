/// Straightforward reference implementations, written from the specification
/// independently of the library's single-pass scanner, to judge mutated inputs.
enum Reference {
  static func checkDigit(_ values: [Int], weights: [Int]) -> Int {
    let sum = zip(values, weights).map { $0 * $1 }.reduce(0, +)
    let remainder = sum % 11
    return remainder < 2 ? 0 : 11 - remainder
  }

  /// `digits` holds exactly 11 ASCII digits.
  static func isValidCPF(_ digits: String) -> Bool {
    let values = digits.compactMap { $0.wholeNumberValue }
    guard values.count == 11, digits.count == 11 else { return false }
    if Set(values).count == 1 { return false }
    let first = checkDigit(Array(values[0..<9]), weights: Array((2...10).reversed()))
    let second = checkDigit(Array(values[0..<10]), weights: Array((2...11).reversed()))
    return values[9] == first && values[10] == second
  }

  /// `value` holds exactly 14 uppercase ASCII letters or digits.
  static func isValidCNPJ(_ value: String) -> Bool {
    let characters = Array(value)
    guard characters.count == 14 else { return false }
    guard characters[12].isNumber, characters[13].isNumber else { return false }
    if Set(characters).count == 1 { return false }
    let values = characters.compactMap { $0.asciiValue.map { Int($0) - 48 } }
    let first = checkDigit(Array(values[0..<12]), weights: [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
    let second = checkDigit(
      Array(values[0..<13]), weights: [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
    return values[12] == first && values[13] == second
  }
}

extension String {
  /// Replaces the character at a 0-based offset.
  func replacing(at offset: Int, with character: Character) -> String {
    var characters = Array(self)
    characters[offset] = character
    return String(characters)
  }
}
