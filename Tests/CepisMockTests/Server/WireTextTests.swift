import BrazilianDocuments
import Foundation
import Testing

@testable import CepisMock

extension MockTests {
  /// The mock's byte-level reading of a `/csv` list and writing of its rows, each against a
  /// plain model: the mock is the ground truth every client test compares with.
  @Suite struct WireTextTests {
    func parse(_ list: String, limit: Int = 500) -> CEPList {
      var list = list
      return list.withUTF8 { parseCEPList($0, limit: limit) }
    }

    /// The list as read before it was read on bytes: `String` splitting and trimming of
    /// `Character`s, then `cepValue` of each item.
    func model(_ list: String, limit: Int) -> CEPList {
      var values: [Int] = []
      for item in list.split(separator: ",", omittingEmptySubsequences: false) {
        let text = item.trimmingSpaces
        guard let value = cepValue(text) else { return .invalid(text) }
        values.append(value)
        if values.count > limit { return .tooMany }
      }
      return .values(values)
    }

    @Test func listsOfCEPs() {
      #expect(parse("01001000") == .values([1_001_000]))
      #expect(
        parse("01001000,20040-020, \t99999999\t ") == .values([1_001_000, 20_040_020, 99_999_999]))
      #expect(parse("01001000,123") == .invalid("123"))
      #expect(parse("01001000, x1 ,02") == .invalid("x1"))
      #expect(parse("") == .invalid(""))
      #expect(parse("01001000,") == .invalid(""))
      #expect(parse(",01001000") == .invalid(""))
      #expect(parse("0100-1000") == .invalid("0100-1000"))
      #expect(parse("01001 000") == .invalid("01001 000"))
      #expect(parse("０1001000") == .invalid("０1001000"))
      let three = "01001000,01001001,01001002"
      #expect(parse(three, limit: 3) == .values([1_001_000, 1_001_001, 1_001_002]))
      #expect(parse(three, limit: 2) == .tooMany)
      // Whichever comes first, one CEP past the limit or a bad item, is the answer.
      #expect(parse("01001000,01001001,bad", limit: 1) == .tooMany)
      #expect(parse("01001000,bad,01001002", limit: 1) == .invalid("bad"))
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func listsAgreeWithTheModel(seed: UInt64) {
      var random = SplitMix64(state: seed)
      let pieces = [
        "0", "1", "5", "9", "-", " ", "\t", ",", "x", "é", "０", "01001000", "20040-020", "1234567",
        "123456789",
      ]
      for _ in 0..<20_000 {
        var list = ""
        for _ in 0..<Int.random(in: 1...12, using: &random) {
          list += pieces.randomElement(using: &random)!
        }
        let limit = Int.random(in: 0...4, using: &random)
        #expect(parse(list, limit: limit) == model(list, limit: limit), "\(Array(list.utf8))")
      }
      // Lists of well-formed CEPs, masked or not, with spaces and tabs around them.
      for _ in 0..<2_000 {
        let values = (0..<Int.random(in: 1...500, using: &random)).map { _ in
          Int.random(in: 0...99_999_999, using: &random)
        }
        let items = values.map { value -> String in
          let digits = String(format: "%08d", value)
          let cep = Bool.random(using: &random) ? digits : "\(digits.prefix(5))-\(digits.suffix(3))"
          return [" ", "\t", ""].randomElement(using: &random)! + cep
            + [" ", "\t", ""].randomElement(using: &random)!
        }
        #expect(parse(items.joined(separator: ",")) == .values(values))
      }
    }

    @Test(arguments: [UInt64(7), 8])
    func digitsAgreeWithTheStandardLibrary(seed: UInt64) {
      var random = SplitMix64(state: seed)
      var values = [0, 1, 9, 10, 99, 100, 9_999_999, 10_000_000, 99_999_999, 100_000_000, Int.max]
      for _ in 0..<200_000 { values.append(Int.random(in: 0...99_999_999, using: &random)) }
      for _ in 0..<1_000 { values.append(Int.random(in: 0...Int.max, using: &random)) }
      for value in values {
        var decimal: [UInt8] = [7]
        appendDecimal(value, to: &decimal)
        #expect(decimal == [7] + Array(String(value).utf8), "\(value)")
        guard value <= 99_999_999 else { continue }
        let digits = String(format: "%08d", value)
        var cep: [UInt8] = []
        appendCEP(value, masked: false, to: &cep)
        #expect(String(decoding: cep, as: UTF8.self) == digits)
        cep.removeAll()
        appendCEP(value, masked: true, to: &cep)
        #expect(String(decoding: cep, as: UTF8.self) == "\(digits.prefix(5))-\(digits.suffix(3))")
      }
      var negative: [UInt8] = []
      appendDecimal(-5, to: &negative)
      #expect(negative == Array("0".utf8))
    }

    @Test func queries() {
      #expect(
        queryDictionary("ceps=01001000%2C20040020&x=a+b&flag&x=c") == [
          "ceps": "01001000,20040020", "x": "c", "flag": "",
        ])
      #expect(queryDictionary("a=%E2%9C%93&b=%zz&c=%4") == ["a": "✓", "b": "%zz", "c": "%4"])
      #expect(queryDictionary("") == [:])
      #expect(queryDictionary(nil) == [:])
      #expect(percentDecoded("S%C3%A3o%20Paulo"[...]) == "São Paulo")
    }
  }
}
