import BrazilianDocuments
import CepisTestSupport
import Foundation
import Testing

@Suite("CNPJ")
struct CNPJTests {
  @Test(
    "Valid CNPJs, numeric and alphanumeric, are accepted",
    arguments: [
      ("11.222.333/0001-81", "11222333000181", false),
      ("11222333000181", "11222333000181", false),
      ("11.444.777/0001-61", "11444777000161", false),
      ("  11.444.777/0001-61  ", "11444777000161", false),
      ("12ABC34501DE35", "12ABC34501DE35", true),
      ("12.ABC.345/01DE-35", "12ABC34501DE35", true),
      ("12.abc.345/01de-35", "12ABC34501DE35", true),
      ("12 ABC 345 01DE 35", "12ABC34501DE35", true),
      ("AB1C2D3E000130", "AB1C2D3E000130", true),
      ("Z9Y8X7W6V5U429", "Z9Y8X7W6V5U429", true),
      ("00000000000A04", "00000000000A04", true),
      ("A0000000000032", "A0000000000032", true),
      ("ZZZZZZZZZZZZ62", "ZZZZZZZZZZZZ62", true),
      ("1a2b3c4d5e6f34", "1A2B3C4D5E6F34", true),
    ])
  func acceptsValid(_ text: String, _ value: String, _ alphanumeric: Bool) throws {
    #expect(CNPJ.isValid(text))
    #expect(CNPJ.isValid(utf8: Array(text.utf8)))
    let cnpj = try CNPJ(text)
    #expect(cnpj.value == value)
    #expect(cnpj.isAlphanumeric == alphanumeric)
  }

  @Test(
    "Invalid CNPJs are refused",
    arguments: [
      "11.222.333/0001-80", "11222333000182", "12ABC34501DE36", "12ABC34501DE53",
      "12ABC34501DE3", "12ABC34501DE355", "", "12ABC34501DE3A", "12ABC34501DEA5",
      "12_ABC34501DE35", "12ÁBC34501DE35", "00000000000000", "11111111111111",
      "99.999.999/9999-99", "12.ABC.345\\01DE-35",
    ])
  func refusesInvalid(_ text: String) {
    #expect(!CNPJ.isValid(text))
    #expect(!CNPJ.isValid(utf8: Array(text.utf8)))
    #expect(throws: DocumentError.self) { try CNPJ(text) }
  }

  @Test("The worked example of the Receita Federal: 12ABC34501DE gives 35")
  func receitaExample() throws {
    for digits in 0...99 where digits != 35 {
      let twoDigits = digits < 10 ? "0\(digits)" : "\(digits)"
      #expect(!CNPJ.isValid("12ABC34501DE" + twoDigits))
    }
    #expect(CNPJ.isValid("12ABC34501DE35"))
  }

  @Test("Parts and formatting")
  func parts() throws {
    let cnpj = try CNPJ("12.abc.345/01de-35")
    #expect(cnpj.formatted == "12.ABC.345/01DE-35")
    #expect(cnpj.root == "12ABC345")
    #expect(cnpj.branch == "01DE")
    #expect(cnpj.checkDigits == "35")
    #expect(!cnpj.isHeadquarters)
    #expect(cnpj.redacted == "**.ABC.345/01DE-**")
    #expect(cnpj.description == "12.ABC.345/01DE-35")
    #expect(cnpj.debugDescription == "CNPJ(12.ABC.345/01DE-35)")
    let headquarters = try CNPJ("11222333000181")
    #expect(headquarters.isHeadquarters)
    #expect(headquarters.formatted == "11.222.333/0001-81")
    #expect(headquarters.root == "11222333")
    #expect(headquarters.branch == "0001")
  }

  @Test("A character repeated 14 times is refused", arguments: 0...9)
  func repeated(_ digit: Int) {
    let text = String(repeating: String(digit), count: 14)
    #expect(!CNPJ.isValid(text))
    #expect(
      throws: DocumentError.repeatedSequence(
        .cnpj,
        redacted:
          "**.\(String(repeating: String(digit), count: 3)).\(String(repeating: String(digit), count: 3))/\(String(repeating: String(digit), count: 4))-**"
      )
    ) {
      try CNPJ(text)
    }
  }

  // The seeded tests below run their loops off the cooperative pool (`runOffThePool`), as
  // CPFTests' do.

  @Test("Random CNPJs are valid, in the requested format", arguments: [false, true])
  func random(_ alphanumeric: Bool) async {
    let failures = await runOffThePool { () -> [String] in
      var generator = SplitMix64(state: alphanumeric ? 2_026 : 1_934)
      var failures: [String] = []
      for _ in 0..<3_000 {
        let cnpj = CNPJ.random(alphanumeric: alphanumeric, using: &generator)
        if !CNPJ.isValid(cnpj.value) || !CNPJ.isValid(cnpj.formatted)
          || !Reference.isValidCNPJ(cnpj.value)
        {
          failures.append("invalid: \(cnpj.value)")
        }
        if cnpj.isAlphanumeric != alphanumeric { failures.append("kind: \(cnpj.value)") }
        if cnpj.branch == "0000" { failures.append("branch 0000: \(cnpj.value)") }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures.prefix(10))")
    #expect(CNPJ.random(alphanumeric: alphanumeric).isAlphanumeric == alphanumeric)
  }

  @Test("Changing a check digit always invalidates; other changes agree with the reference")
  func mutations() async {
    let failures = await runOffThePool { () -> [String] in
      var generator = SplitMix64(state: 99)
      let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
      var failures: [String] = []
      for round in 0..<6_000 {
        let value = CNPJ.random(alphanumeric: round.isMultiple(of: 2), using: &generator).value
        let offset = Int.random(in: 0..<14, using: &generator)
        let choices = offset >= 12 ? alphabet[0..<10] : alphabet[0..<36]
        var replacement = Array(value)[offset]
        while replacement == Array(value)[offset] {
          replacement = choices.randomElement(using: &generator) ?? "0"
        }
        let mutated = value.replacing(at: offset, with: replacement)
        if offset >= 12 && CNPJ.isValid(mutated) { failures.append("check digit: \(mutated)") }
        if CNPJ.isValid(mutated) != Reference.isValidCNPJ(mutated) {
          failures.append("disagrees: \(mutated)")
        }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures.prefix(10))")
  }

  @Test("Values 11 apart are a blind spot of the scheme, as documented")
  func elevenApart() throws {
    #expect(CNPJ.isValid("11.444.777/0001-61"))
    #expect(CNPJ.isValid("11.444.B77/0001-61"))
    #expect(CNPJ.isValid("11.444.BBB/0001-61"))
    #expect(try CNPJ("11444b77000161").isAlphanumeric)
  }

  @Test("Byte entry points take any collection of UTF-8 bytes")
  func bytes() {
    let line = "id;12.ABC.345/01DE-35;x"
    let field = line.split(separator: ";")[1]
    #expect(CNPJ.isValid(utf8: field.utf8))
    #expect(CNPJ.isValid(utf8: [UInt8]("12ABC34501DE35".utf8)[...]))
    let valid = Array("11222333000181".utf8).withUnsafeBufferPointer { CNPJ.isValid(utf8: $0) }
    #expect(valid)
    #expect(!CNPJ.isValid(utf8: [0x31, 0xFF, 0x31]))
  }

  @Test("Codable as a single uppercase string; invalid input is rejected")
  func codable() throws {
    let cnpj = try CNPJ("12.abc.345/01de-35")
    let data = try JSONEncoder().encode([cnpj])
    #expect(String(decoding: data, as: UTF8.self) == #"["12ABC34501DE35"]"#)
    #expect(try JSONDecoder().decode([CNPJ].self, from: data) == [cnpj])
    #expect(
      try JSONDecoder().decode([CNPJ].self, from: Data(#"["12.abc.345/01de-35"]"#.utf8)) == [cnpj])
    for bad in [#"["12ABC34501DE36"]"#, #"["00000000000000"]"#, #"[11222333000181]"#] {
      #expect(throws: DecodingError.self) {
        try JSONDecoder().decode([CNPJ].self, from: Data(bad.utf8))
      }
    }
  }

  @Test("Dump and Mirror show the formatted value")
  func reflection() throws {
    let cnpj = try CNPJ("11222333000181")
    var dumped = ""
    dump(cnpj, to: &dumped)
    #expect(dumped.contains("11.222.333/0001-81"))
    #expect(Mirror(reflecting: cnpj).children.count == 1)
  }
}
