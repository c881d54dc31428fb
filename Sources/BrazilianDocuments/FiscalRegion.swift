/// One of the ten fiscal regions of the Receita Federal, named by the 9th digit of a CPF.
///
/// The raw value is the region's ordinal (1…10); the digit written in the CPF is
/// ``digit``, which is `0` for the 10th region (Rio Grande do Sul).
///
/// ```swift
/// let cpf = try CPF("390.533.447-05")
/// cpf.fiscalRegion          // .seventh
/// cpf.fiscalRegion.states   // [.es, .rj]
/// ```
public enum FiscalRegion: Int, CaseIterable, Sendable, Codable {
  /// 1ª Região Fiscal (digit 1): DF, GO, MS, MT, TO.
  case first = 1
  /// 2ª Região Fiscal (digit 2): AC, AM, AP, PA, RO, RR.
  case second
  /// 3ª Região Fiscal (digit 3): CE, MA, PI.
  case third
  /// 4ª Região Fiscal (digit 4): AL, PB, PE, RN.
  case fourth
  /// 5ª Região Fiscal (digit 5): BA, SE.
  case fifth
  /// 6ª Região Fiscal (digit 6): MG.
  case sixth
  /// 7ª Região Fiscal (digit 7): ES, RJ.
  case seventh
  /// 8ª Região Fiscal (digit 8): SP.
  case eighth
  /// 9ª Região Fiscal (digit 9): PR, SC.
  case ninth
  /// 10ª Região Fiscal (digit 0): RS.
  case tenth

  /// The region whose CPFs carry `digit` (0…9) in 9th place, or `nil` outside 0…9.
  public init?(digit: Int) {
    guard (0...9).contains(digit) else { return nil }
    self.init(rawValue: digit == 0 ? 10 : digit)
  }

  /// The digit that CPFs of this region carry in 9th place (`0` for the 10th region).
  public var digit: Int { rawValue % 10 }

  /// The units served by the region, in alphabetical order of abbreviation.
  public var states: [UF] {
    UF.allCases.filter { $0.fiscalRegion == self }.sorted { $0.rawValue < $1.rawValue }
  }

  /// The region's Portuguese name, `"7ª Região Fiscal"`.
  public var name: String { "\(rawValue)ª Região Fiscal" }
}
