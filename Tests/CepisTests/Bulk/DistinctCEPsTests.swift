import BrazilianDocuments
import CepisTestSupport
import Testing

@testable import Cepis

/// `DistinctCEPs`, the de-duplication `lookupMany` runs before its engine, against a plain
/// dictionary: over seeded inputs of masked, unmasked, padded and malformed CEPs, the distinct
/// CEPs come once each in the order they first appear, and every input gets the answer of its
/// own CEP back (a malformed one `nil`) — each input compared, never a sample. Both ways are
/// held to it: the hash table a few inputs go through and the radix sort of many.
@Suite("lookupMany's distinct CEPs against a dictionary")
struct DistinctCEPsTests {
  /// How the inputs of a trial repeat: from a pool this large (small: many repeats), and the
  /// share of malformed inputs (in 1,000).
  struct Shape: Sendable, CustomTestStringConvertible {
    var pool: Int
    var malformedPerMille: UInt64
    /// Distinct inputs first, for this many rows, before the pool's repeats begin: the
    /// positions table is made only at the first repeat (or malformed input), at any index.
    var distinctPrefix: Int
    /// When above 0, the inputs are sorted by CEP, each CEP `runs` times in a row (a file
    /// sorted by CEP): the sort has nothing to do, and still finds the repeats.
    var runs = 0
    var testDescription: String {
      "pool \(pool), \(malformedPerMille)‰ malformed, \(distinctPrefix) distinct first"
        + (runs > 0 ? ", sorted in runs of \(runs)" : "")
    }
  }

  /// How `DistinctCEPs` finds the repeats.
  enum Way: String, CaseIterable, Sendable {
    case probing, sorting
    /// The `sortFrom` that picks this way for any number of inputs.
    var sortFrom: Int { self == .sorting ? 0 : .max }
  }

  static let shapes: [Shape] = [
    Shape(pool: 1_000_000, malformedPerMille: 0, distinctPrefix: 0),
    // CEPs from the whole range: every digit of the radix sort orders something.
    Shape(pool: 79_999_999, malformedPerMille: 20, distinctPrefix: 0),
    Shape(pool: 50, malformedPerMille: 0, distinctPrefix: 0),
    Shape(pool: 400, malformedPerMille: 100, distinctPrefix: 0),
    Shape(pool: 400, malformedPerMille: 5, distinctPrefix: 150),
    Shape(pool: 1_000_000, malformedPerMille: 0, distinctPrefix: 300),
    Shape(pool: 0, malformedPerMille: 10, distinctPrefix: 0, runs: 3),
  ]

  /// A spelling of `number` that `lookupMany` accepts: 8 digits or masked, padded or not.
  static func spelling(_ number: Int, _ random: inout SplitMix64) -> String {
    let digits = cepString(number)
    let masked = String(digits.prefix(5)) + "-" + String(digits.suffix(3))
    switch random.next() % 4 {
    case 0: return digits
    case 1: return masked
    case 2: return " " + digits + " "
    default: return "\t" + masked + " "
    }
  }

  static let malformed = [
    "", "oops", "1234567", "123456789", "01001-00", "0100 1000", "０１００１０００",
  ]

  @Test(
    "every input gets its own CEP's answer, each distinct CEP asked once",
    arguments: shapes, Way.allCases)
  func againstDictionary(_ shape: Shape, way: Way) async {
    let failures = await runOffThePool { () -> [String] in
      var random = SplitMix64(state: 0xD157_1C7 &+ UInt64(shape.pool) &+ shape.malformedPerMille)
      var failures: [String] = []
      for trial in 0..<400 where failures.count < 5 {
        // Every 100th trial is large: tens of thousands of inputs, as a real `lookupMany`
        // that sorts has.
        let count = Int(random.next() % (trial % 100 == 99 ? 40_000 : 700))
        var inputs: [String] = []
        var nextFresh = 10_000_000 + Int(random.next() % 1_000) * 10_000
        for index in 0..<count {
          if random.next() % 1_000 < shape.malformedPerMille {
            inputs.append(Self.malformed[Int(random.next() % UInt64(Self.malformed.count))])
          } else if shape.runs > 0 {
            inputs.append(Self.spelling(20_000_000 + index / shape.runs, &random))
          } else if index < shape.distinctPrefix {
            inputs.append(Self.spelling(nextFresh, &random))
            nextFresh += 1
          } else {
            let number = 20_000_000 + Int(random.next() % UInt64(shape.pool))
            inputs.append(Self.spelling(number, &random))
          }
        }
        // The reference: each input's CEP as `normalizeCEP` reads it, numbered in order of
        // first appearance.
        var order: [String: Int] = [:]
        var referenceNumbers: [Int] = []
        var referenceCEP: [String?] = []
        for input in inputs {
          guard let cep = try? normalizeCEP(input) else {
            referenceCEP.append(nil)
            continue
          }
          referenceCEP.append(cep)
          if order[cep] == nil {
            order[cep] = referenceNumbers.count
            referenceNumbers.append(Int(cep)!)
          }
        }
        let distinct = DistinctCEPs(inputs, sortFrom: way.sortFrom)
        guard distinct.numbers == referenceNumbers else {
          let at = zip(distinct.numbers, referenceNumbers).enumerated().first { $1.0 != $1.1 }?.0
          failures.append(
            "trial \(trial): \(distinct.numbers.count) numbers, not \(referenceNumbers.count);"
              + " first difference at \(String(describing: at))")
          continue
        }
        // An answer per distinct CEP that names it; every third one "does not exist".
        let answers: [Address?] = distinct.numbers.enumerated().map { position, number in
          position % 3 == 2
            ? nil
            : Address(
              cep: cepString(number), logradouro: "Rua \(number)", complemento: "",
              bairro: "", localidade: "Cidade", uf: "SP", ibge: "3550308", geo: nil)
        }
        let spread = distinct.spread(answers)
        guard spread.count == inputs.count else {
          failures.append("trial \(trial): \(spread.count) answers for \(inputs.count) inputs")
          continue
        }
        for (index, cep) in referenceCEP.enumerated() {
          let expected = cep.flatMap { answers[order[$0]!] }
          if spread[index] != expected {
            let got = String(describing: spread[index]?.cep)
            let want = String(describing: expected?.cep)
            failures.append("trial \(trial), input \(index) \(inputs[index]): \(got), not \(want)")
            break
          }
        }
        // No table of positions while every input is its CEP's first and well-formed.
        let identity = referenceCEP.count == referenceNumbers.count && !referenceCEP.contains(nil)
        if identity != distinct.positions.isEmpty && !inputs.isEmpty {
          failures.append("trial \(trial): positions kept \(!distinct.positions.isEmpty)")
        }
      }
      return failures
    }
    #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
  }
}
