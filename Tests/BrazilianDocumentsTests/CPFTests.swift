import BrazilianDocuments
import CepisTestSupport
import Foundation
import Testing

@Suite("CPF")
struct CPFTests {
  @Test(
    "Valid CPFs are accepted in every accepted spelling",
    arguments: [
      "39053344705", "390.533.447-05", "  390.533.447-05 ", "\t39053344705\n",
      "52998224725", "529.982.247-25", "11144477735", "00000000191", "12345678909",
    ])
  func acceptsValid(_ text: String) throws {
    #expect(CPF.isValid(text))
    #expect(CPF.isValid(utf8: Array(text.utf8)))
    let cpf = try CPF(text)
    #expect(cpf.digits.count == 11)
    #expect(cpf.digits.allSatisfy { $0.isNumber })
  }

  @Test(
    "Invalid CPFs are refused",
    arguments: [
      "123.456.789-00", "39053344706", "39053344715", "3905334470", "390533447050", "",
      "   ", "390.533.447/05", "39053344a05", "390,533,447-05", "３９０５３３４４７０５",
      "390 533 447 05x",
    ])
  func refusesInvalid(_ text: String) {
    #expect(!CPF.isValid(text))
    #expect(!CPF.isValid(utf8: Array(text.utf8)))
    #expect(throws: DocumentError.self) { try CPF(text) }
  }

  @Test("Repeated-digit sequences are refused although their check digits pass", arguments: 0...9)
  func refusesRepeated(_ digit: Int) {
    let text = String(repeating: String(digit), count: 11)
    #expect(
      Reference.checkDigit(Array(repeating: digit, count: 9), weights: Array((2...10).reversed()))
        == digit)
    #expect(!CPF.isValid(text))
    #expect(
      throws: DocumentError.repeatedSequence(
        .cpf, redacted: "***.\(text.prefix(3)).\(text.prefix(3))-**")
    ) {
      try CPF(text)
    }
  }

  @Test("Formatting and redaction")
  func formatting() throws {
    let cpf = try CPF("39053344705")
    #expect(cpf.digits == "39053344705")
    #expect(cpf.formatted == "390.533.447-05")
    #expect(cpf.redacted == "***.533.447-**")
    #expect(try CPF(" 390.533.447-05 ") == cpf)
  }

  @Test("The text never leaks the digits")
  func redactionEverywhere() throws {
    let cpf = try CPF("390.533.447-05")
    var dumped = ""
    dump(cpf, to: &dumped)
    var dumpedArray = ""
    dump([cpf], to: &dumpedArray)
    let mirrorText = Mirror(reflecting: cpf).children.map { "\($0.label ?? ""): \($0.value)" }
    let texts = [
      cpf.description, cpf.debugDescription, "\(cpf)", String(describing: cpf),
      String(reflecting: cpf), dumped, dumpedArray, "\([cpf])", "\(Optional(cpf) as Any)",
      mirrorText.joined(), "\(["key": cpf])",
    ]
    for text in texts {
      #expect(!text.contains("39053344705"), "\(text)")
      #expect(!text.contains("390.533.447-05"), "\(text)")
      #expect(!text.contains("390"), "\(text)")
    }
    #expect(cpf.description == "***.533.447-**")
    #expect(cpf.debugDescription == "CPF(***.533.447-**)")
    #expect(dumped.contains("***.533.447-**"))
  }

  @Test(
    "The 9th digit names the fiscal region",
    arguments: [
      ("39053344705", FiscalRegion.seventh, [UF.es, .rj]),
      ("52998224725", .seventh, [.es, .rj]),
      ("00000000272", .second, [.ac, .am, .ap, .pa, .ro, .rr]),
      ("98765432029", .tenth, [.rs]),
      ("12345678810", .eighth, [.sp]),
      ("11144477735", .seventh, [.es, .rj]),
      ("00000000191", .first, [.df, .go, .ms, .mt, .to]),
      ("12345678909", .ninth, [.pr, .sc]),
    ])
  func fiscalRegion(_ text: String, _ region: FiscalRegion, _ states: [UF]) throws {
    let cpf = try CPF(text)
    #expect(cpf.fiscalRegion == region)
    #expect(cpf.fiscalRegion.states == states)
  }

  @Test("Fiscal regions cover every unit once, with digits 1…9 and 0")
  func fiscalRegionTable() {
    let expected: [Int: Set<String>] = [
      1: ["DF", "GO", "MS", "MT", "TO"], 2: ["AC", "AM", "AP", "PA", "RO", "RR"],
      3: ["CE", "MA", "PI"], 4: ["AL", "PB", "PE", "RN"], 5: ["BA", "SE"], 6: ["MG"],
      7: ["ES", "RJ"], 8: ["SP"], 9: ["PR", "SC"], 0: ["RS"],
    ]
    for (digit, states) in expected {
      let region = FiscalRegion(digit: digit)
      #expect(region?.digit == digit)
      #expect(Set(region?.states.map(\.rawValue) ?? []) == states)
    }
    #expect(FiscalRegion(digit: 0) == .tenth)
    #expect(FiscalRegion(digit: 10) == nil)
    #expect(FiscalRegion.tenth.name == "10ª Região Fiscal")
    #expect(FiscalRegion.allCases.flatMap(\.states).count == 27)
  }

  // The seeded tests below run their loops off the cooperative pool (`runOffThePool`): a
  // second of synchronous work on each of its two threads, at the start of the run, held up
  // every other test's async code (a 0.3 s deadline was seen to fire seconds late).

  @Test(
    "Random CPFs are valid and keep the requested region", arguments: [nil] + FiscalRegion.allCases)
  func random(_ region: FiscalRegion?) async throws {
    let failures = await runOffThePool { () -> [String] in
      var generator = SplitMix64(state: 0xC9F_0001 &+ UInt64(region?.rawValue ?? 0))
      var failures: [String] = []
      for _ in 0..<2_000 {
        let cpf = CPF.random(region: region, using: &generator)
        if !CPF.isValid(cpf.digits) || !Reference.isValidCPF(cpf.digits) {
          failures.append("invalid: \(cpf.digits)")
        }
        if let region, cpf.fiscalRegion != region { failures.append("region: \(cpf.digits)") }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures.prefix(10))")
    #expect(CPF.isValid(CPF.random(region: region).formatted))
  }

  @Test("Changing a check digit always invalidates; other changes agree with the reference")
  func mutations() async {
    let failures = await runOffThePool { () -> [String] in
      var generator = SplitMix64(state: 42)
      var failures: [String] = []
      for _ in 0..<5_000 {
        let digits = CPF.random(using: &generator).digits
        let offset = Int.random(in: 0..<11, using: &generator)
        let original = Array(digits)[offset].wholeNumberValue ?? 0
        let replacement = (original + Int.random(in: 1...9, using: &generator)) % 10
        let mutated = digits.replacing(at: offset, with: Character(String(replacement)))
        if offset >= 9 && CPF.isValid(mutated) { failures.append("check digit: \(mutated)") }
        if CPF.isValid(mutated) != Reference.isValidCPF(mutated) {
          failures.append("disagrees: \(mutated)")
        }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures.prefix(10))")
  }

  @Test("Random 11-digit strings agree with the reference")
  func randomStrings() async {
    let (failures, validCount) = await runOffThePool { () -> ([String], Int) in
      var generator = SplitMix64(state: 7)
      var failures: [String] = []
      var validCount = 0
      for _ in 0..<20_000 {
        let text = String(
          (0..<11).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) })
        let valid = CPF.isValid(text)
        if valid != Reference.isValidCPF(text) { failures.append(text) }
        if valid { validCount += 1 }
      }
      return (failures, validCount)
    }
    #expect(failures.isEmpty, "\(failures.prefix(10))")
    // About 1 in 100 random strings passes two mod-11 digits.
    #expect((100...400).contains(validCount))
  }

  @Test("Codable as a single string of digits; invalid input is rejected")
  func codable() throws {
    let cpf = try CPF("390.533.447-05")
    let data = try JSONEncoder().encode([cpf])
    #expect(String(decoding: data, as: UTF8.self) == #"["39053344705"]"#)
    #expect(try JSONDecoder().decode([CPF].self, from: data) == [cpf])
    let formatted = Data(#"["390.533.447-05"]"#.utf8)
    #expect(try JSONDecoder().decode([CPF].self, from: formatted) == [cpf])
    for bad in [#"["39053344706"]"#, #"["11111111111"]"#, #"[39053344705]"#, #"["1"]"#] {
      #expect(throws: DecodingError.self) {
        try JSONDecoder().decode([CPF].self, from: Data(bad.utf8))
      }
    }
    do {
      _ = try JSONDecoder().decode([CPF].self, from: Data(#"["39053344706"]"#.utf8))
      Issue.record("decoded an invalid CPF")
    } catch DecodingError.dataCorrupted(let context) {
      #expect(
        context.underlyingError as? DocumentError
          == .checkDigitMismatch(.cpf, redacted: "***.533.447-**"))
      #expect(!context.debugDescription.contains("39053344706"))
    }
  }

  @Test("Hashable by digits, whatever the spelling")
  func hashable() throws {
    let set: Set<CPF> = [try CPF("39053344705"), try CPF("390.533.447-05"), try CPF("52998224725")]
    #expect(set.count == 2)
  }
}
