import BrazilianDocuments
import Foundation
import Testing

@Suite("UF and CEP ranges")
struct UFTests {
  @Test("27 units with names, IBGE codes and regions")
  func table() {
    #expect(UF.allCases.count == 27)
    #expect(Set(UF.allCases.map(\.ibgeCode)).count == 27)
    #expect(UF.sp.name == "São Paulo")
    #expect(UF.sp.ibgeCode == 35)
    #expect(UF.rj.ibgeCode == 33)
    #expect(UF.df.ibgeCode == 53)
    #expect(UF.ro.ibgeCode == 11)
    #expect(UF.to.ibgeCode == 17)
    #expect(UF.rs.ibgeCode == 43)
    #expect(UF(ibgeCode: 29) == .ba)
    #expect(UF(ibgeCode: 34) == nil)
    #expect(UF(rawValue: "SP") == .sp)
    #expect(UF(rawValue: "sp") == nil)
    #expect(UF.df.region == .centroOeste)
    #expect(UF.Region.centroOeste.name == "Centro-Oeste")
    let sizes = UF.Region.allCases.map { $0.units.count }
    #expect(sizes == [7, 9, 4, 4, 3])
    #expect(UF.Region.sudeste.units == [.es, .mg, .rj, .sp])
    for uf in UF.allCases {
      #expect(uf.rawValue == uf.rawValue.uppercased())
      #expect(uf.rawValue.count == 2)
      #expect(!uf.cepRanges.isEmpty)
    }
  }

  @Test("Codable as the abbreviation")
  func codable() throws {
    let data = try JSONEncoder().encode([UF.sp, .df])
    #expect(String(decoding: data, as: UTF8.self) == #"["SP","DF"]"#)
    #expect(try JSONDecoder().decode([UF].self, from: data) == [.sp, .df])
  }

  @Test("Both ends of every range, and one past them", arguments: UF.cepRanges)
  func rangeEdges(_ range: CEPRange) {
    let low = range.prefixes.lowerBound
    let high = range.prefixes.upperBound
    #expect(UF(cep: Self.cep(low, "000")) == range.uf)
    #expect(UF(cep: Self.cep(low, "999")) == range.uf)
    #expect(UF(cep: Self.cep(high, "999")) == range.uf)
    #expect(UF(cepPrefix: high) == range.uf)
    let neighbours = UF.cepRanges
    if let before = neighbours.last(where: { $0.prefixes.upperBound < low }) {
      let expected = before.prefixes.upperBound == low - 1 ? before.uf : nil
      #expect(UF(cep: Self.cep(low - 1, "999")) == expected)
    } else {
      #expect(UF(cep: Self.cep(low - 1, "999")) == nil)
    }
    if let after = neighbours.first(where: { $0.prefixes.lowerBound > high }) {
      let expected = after.prefixes.lowerBound == high + 1 ? after.uf : nil
      #expect(UF(cep: Self.cep(high + 1, "000")) == expected)
    }
  }

  @Test(
    "The brief's table, edge by edge",
    arguments: [
      ("00999-999", nil), ("01000-000", UF.sp), ("19999-999", .sp), ("20000-000", .rj),
      ("28999-999", .rj), ("29000-000", .es), ("29999-999", .es), ("30000-000", .mg),
      ("39999-999", .mg), ("40000-000", .ba), ("48999-999", .ba), ("49000-000", .se),
      ("49999-999", .se), ("50000-000", .pe), ("56999-999", .pe), ("57000-000", .al),
      ("57999-999", .al), ("58000-000", .pb), ("58999-999", .pb), ("59000-000", .rn),
      ("59999-999", .rn), ("60000-000", .ce), ("63999-999", .ce), ("64000-000", .pi),
      ("64999-999", .pi), ("65000-000", .ma), ("65999-999", .ma), ("66000-000", .pa),
      ("68899-999", .pa), ("68900-000", .ap), ("68999-999", .ap), ("69000-000", .am),
      ("69299-999", .am), ("69300-000", .rr), ("69399-999", .rr), ("69400-000", .am),
      ("69899-999", .am), ("69900-000", .ac), ("69999-999", .ac), ("70000-000", .df),
      ("72799-999", .df), ("72800-000", .go), ("72999-999", .go), ("73000-000", .df),
      ("73699-999", .df), ("73700-000", .go), ("76799-999", .go), ("76800-000", .ro),
      ("76999-999", .ro), ("77000-000", .to), ("77999-999", .to), ("78000-000", .mt),
      ("78899-999", .mt), ("78900-000", nil), ("78999-999", nil), ("79000-000", .ms),
      ("79999-999", .ms), ("80000-000", .pr), ("87999-999", .pr), ("88000-000", .sc),
      ("89999-999", .sc), ("90000-000", .rs), ("99999-999", .rs), ("00000-000", nil),
    ])
  func briefTable(_ cep: String, _ uf: UF?) {
    #expect(UF(cep: cep) == uf)
    #expect(UF(cep: cep.replacingOccurrences(of: "-", with: "")) == uf)
  }

  @Test(
    "Accepted spellings of a CEP",
    arguments: ["01001-000", "01001000", " 01001-000 ", "01.001-000", "01.001000"])
  func spellings(_ cep: String) {
    #expect(UF(cep: cep) == .sp)
  }

  @Test(
    "Malformed CEPs give nil",
    arguments: [
      "", "0100-1000", "0100100", "010010000", "01001--000", "01001-00a", "01 001-000",
      "01001-000-", "-01001000", "010.01-000", "０１００１０００", "01001_000", "01001-0000",
    ])
  func malformed(_ cep: String) {
    #expect(UF(cep: cep) == nil)
  }

  @Test("The table is sorted, disjoint, and its bounds print with five digits")
  func tableShape() {
    let ranges = UF.cepRanges
    #expect(ranges.count == 30)
    for (current, next) in zip(ranges, ranges.dropFirst()) {
      #expect(current.prefixes.upperBound < next.prefixes.lowerBound)
    }
    #expect(ranges[0].lowerBound == "01000")
    #expect(ranges[0].upperBound == "19999")
    #expect(UF.df.cepRanges.map(\.prefixes) == [70_000...72_799, 73_000...73_699])
    for prefix in 0...99_999 {
      let linear = ranges.first { $0.prefixes.contains(prefix) }?.uf
      if UF(cepPrefix: prefix) != linear {
        Issue.record("prefix \(prefix)")
        break
      }
    }
  }

  private static func cep(_ prefix: Int, _ suffix: String) -> String {
    let digits = String(prefix)
    return String(repeating: "0", count: 5 - digits.count) + digits + "-" + suffix
  }
}
