import Cepis
import CepisMock
import Foundation
import Testing

@testable import CepisCommandLine

extension SplitMix64: MemoChoiceSource {
  mutating func next(below bound: Int) -> Int? { Int(next() % UInt64(bound)) }
}

/// `EnrichMemo` against a plain reference (a dictionary and a recency list), step by step,
/// over seeded random sequences of inserts, recalls, re-inserts and evictions — with long and
/// empty streets, quoted fields, streets too long to keep, not-found answers, and compactions
/// of the street arena and rebuilds of the string pool.
///
/// CI runs a bounded number of operations per capacity; `CEPIS_MEMO_MODEL_OPS` sets another
/// (the 10-million-operation run: `CEPIS_MEMO_MODEL_OPS=10000000 swift test -c release
/// --filter EnrichMemoModelTests`).
@Suite("enrich memo against its reference model")
struct EnrichMemoModelTests {
  static let operations =
    ProcessInfo.processInfo.environment["CEPIS_MEMO_MODEL_OPS"].flatMap(Int.init) ?? 40_000

  static let capacities = [0, 1, 2, 7, 64, 1_000]

  /// Compaction thresholds as in production: compactions only where garbage really piles up.
  @Test(arguments: capacities) func productionThresholds(capacity: Int) {
    var driver = MemoModelDriver(capacity: capacity)
    var random = SplitMix64(state: 0x5EED_0000 &+ UInt64(capacity))
    let failure = driver.run(&random, limit: Self.operations)
    #expect(failure == nil)
    #expect(driver.operations == Self.operations)
    let evictions = driver.memo.evictions
    if capacity >= 64 { #expect(evictions > 0) }
  }

  /// Tiny thresholds: the arena is compacted and the pool rebuilt every few operations, so
  /// every answer must survive both, again and again.
  @Test(arguments: capacities) func constantCompaction(capacity: Int) {
    var driver = MemoModelDriver(capacity: capacity, streetSlack: 256, poolSlack: 4)
    var random = SplitMix64(state: 0xC0A1_0000 &+ UInt64(capacity))
    let failure = driver.run(&random, limit: Self.operations)
    #expect(failure == nil)
    let compactions = driver.memo.compactions
    if capacity > 0 {
      #expect(compactions.streets > 0)
      #expect(compactions.pool > 0)
    }
  }

  /// The defect of issue 16, as a user met it: a memo larger than 716 entries (the size at
  /// which its index first grows) and smaller than the CEPs it sees. Every CEP is inserted
  /// once, evicted, then recalled: a CEP that still answers after its eviction answers with
  /// the entry's new owner.
  @Test(arguments: [717, 1_000, 1_434, 1_999]) func everyEvictedCEPIsForgotten(capacity: Int) {
    var memo = EnrichMemo(capacity: capacity)
    var sink: [UInt8] = []
    let ceps = (0..<(3 * capacity)).map { 10_000_000 + $0 * 17 }
    var forgotten: Set<Int> = []
    for cep in ceps {
      let address = Address(
        cep: String(cep), logradouro: "Rua \(cep)", bairro: "Centro", localidade: "Cidade",
        uf: "SP")
      memo.insert(cep, address, appendingTo: &sink) { forgotten.insert($0) }
    }
    #expect(forgotten == Set(ceps.prefix(2 * capacity)))
    for cep in ceps.prefix(2 * capacity) {
      let held = memo.contains(cep)
      #expect(!held, "CEP \(cep) evicted, still held")
    }
    for cep in ceps.suffix(capacity) {
      var out: [UInt8] = []
      let entry = memo.recall(cep)
      _ = entry.map { memo.appendAnswer($0, to: &out) }
      #expect(String(decoding: out, as: UTF8.self).hasPrefix(",Rua \(cep),"), "CEP \(cep)")
    }
    let broken = memo.invariantViolation()
    #expect(broken == nil)
  }
}
