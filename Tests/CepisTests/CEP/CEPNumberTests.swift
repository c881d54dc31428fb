import BrazilianDocuments
import CepisTestSupport
import Testing

@testable import Cepis

/// `cepNumber` of bytes in memory reads eight digits, and the masked `NNNNN-NNN`, eight bytes
/// at a time; held here to the byte-by-byte scan (the rules of `normalizeCEP`) on every input
/// class where the two paths could part: every CEP shape, each byte of one replaced by every
/// other byte value, and seeded random strings of CEP-ish characters.
@Suite("cepNumber: the word-at-a-time read against the byte scan")
struct CEPNumberTests {
  /// Both paths' answers for `bytes`.
  static func answers(_ bytes: [UInt8]) -> (word: Int?, scan: Int?) {
    (bytes.withUnsafeBufferPointer { cepNumber($0) }, scannedCEPNumber(bytes))
  }

  static func digits(_ value: Int, masked: Bool) -> [UInt8] {
    let text = cepString(value)
    return Array((masked ? maskedCEP(text) : text).utf8)
  }

  @Test("eight digits and the masked form, across the whole range, read as the scan reads them")
  func wellFormed() async {
    let mismatches = await runOffThePool { Self.wellFormedMismatches() }
    #expect(mismatches.isEmpty)
  }

  static func wellFormedMismatches() -> [String] {
    var random = SplitMix64(state: 0xCE9)
    // The ends of the range, round numbers, and a million seeded ones.
    var values = [0, 1, 9, 10, 99, 10_000_000, 99_999_999, 12_345_678, 87_654_321, 1_001_000]
    for _ in 0..<1_000_000 { values.append(Int(random.next() % 100_000_000)) }
    var mismatches: [String] = []
    for value in values {
      for masked in [false, true] {
        let bytes = Self.digits(value, masked: masked)
        let (word, scan) = Self.answers(bytes)
        if word != value || scan != value, mismatches.count < 5 {
          mismatches.append(
            "\(String(decoding: bytes, as: UTF8.self)): \(String(describing: word))")
        }
      }
    }
    return mismatches
  }

  @Test("any one byte of an 8- or 9-byte CEP replaced by any other value: the same answer")
  func everyByteEveryValue() async {
    let mismatches = await runOffThePool { Self.everyByteMismatches() }
    #expect(mismatches.isEmpty)
  }

  static func everyByteMismatches() -> [String] {
    var mismatches: [String] = []
    for base in [
      Self.digits(1_001_000, masked: false), Self.digits(1_001_000, masked: true),
      Self.digits(99_999_999, masked: true), Array("0100100 ".utf8), Array("01001.000".utf8),
    ] {
      for position in base.indices {
        for byte in 0...255 {
          var bytes = base
          bytes[position] = UInt8(byte)
          let (word, scan) = Self.answers(bytes)
          if word != scan, mismatches.count < 5 {
            mismatches.append(
              "\(bytes): word \(String(describing: word)), scan \(String(describing: scan))")
          }
        }
      }
    }
    return mismatches
  }

  @Test("seeded random strings of digits, dashes, dots, spaces, tabs and other bytes")
  func randomStrings() async {
    let (mismatches, valid) = await runOffThePool { Self.randomMismatches() }
    #expect(mismatches.isEmpty)
    // The sequence must hold CEPs, not only garbage.
    #expect(valid > 10_000)
  }

  static func randomMismatches() -> (mismatches: [String], valid: Int) {
    var random = SplitMix64(state: 0x5EED)
    let alphabet =
      Array("0123456789999-.  \t\nx/".utf8) + [0x00, 0x7F, 0x80, 0xC3, 0xFF, 0x2F, 0x3A]
    var mismatches: [String] = []
    var valid = 0
    for _ in 0..<1_000_000 {
      let length = Int(random.next() % 13)
      // Mostly digits, so that many strings are CEPs or nearly.
      let bytes = (0..<length).map { _ -> UInt8 in
        random.next() % 4 == 0
          ? alphabet[Int(random.next() % UInt64(alphabet.count))]
          : UInt8(ascii: "0") + UInt8(random.next() % 10)
      }
      let (word, scan) = Self.answers(bytes)
      if scan != nil { valid += 1 }
      if word != scan, mismatches.count < 5 {
        mismatches.append(
          "\(bytes): word \(String(describing: word)), scan \(String(describing: scan))")
      }
    }
    return (mismatches, valid)
  }
}
