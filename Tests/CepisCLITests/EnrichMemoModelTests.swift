import BrazilianDocuments
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
/// The plain test run does 10,000 operations per capacity and threshold (it shares two cores
/// with every other suite); CI also runs it alone at 100,000 (`.ci/run`), and
/// `CEPIS_MEMO_MODEL_OPS` sets any other number — the 12-million-operation run:
/// `CEPIS_MEMO_MODEL_OPS=1000000 swift test -c release -Xswiftc -enable-testing --filter
/// EnrichMemoModelTests`.
@Suite("enrich memo against its reference model")
struct EnrichMemoModelTests {
  static let operations =
    ProcessInfo.processInfo.environment["CEPIS_MEMO_MODEL_OPS"].flatMap(Int.init) ?? 10_000

  static let capacities = [0, 1, 2, 7, 64, 1_000]

  /// What one seeded run ended with.
  struct Outcome: Sendable {
    var failure: String?
    var operations: Int
    var evictions: Int
    var compactions: (streets: Int, pool: Int)
  }

  /// One seeded run, on a thread of its own (see ``runOffThePool(_:)``).
  static func run(
    capacity: Int, seed: UInt64, streetSlack: Int = 1 << 20, poolSlack: Int = 1_024
  ) async -> Outcome {
    await runOffThePool {
      var driver = MemoModelDriver(
        capacity: capacity, streetSlack: streetSlack, poolSlack: poolSlack)
      var random = SplitMix64(state: seed)
      let failure = driver.run(&random, limit: operations)
      return Outcome(
        failure: failure, operations: driver.operations, evictions: driver.memo.evictions,
        compactions: driver.memo.compactions)
    }
  }

  /// Compaction thresholds as in production: compactions only where garbage really piles up.
  @Test(arguments: capacities) func productionThresholds(capacity: Int) async {
    let outcome = await Self.run(capacity: capacity, seed: 0x5EED_0000 &+ UInt64(capacity))
    #expect(outcome.failure == nil)
    #expect(outcome.operations == Self.operations)
    if capacity >= 64 { #expect(outcome.evictions > 0) }
  }

  /// Tiny thresholds: the arena is compacted and the pool rebuilt every few operations, so
  /// every answer must survive both, again and again.
  @Test(arguments: capacities) func constantCompaction(capacity: Int) async {
    let outcome = await Self.run(
      capacity: capacity, seed: 0xC0A1_0000 &+ UInt64(capacity), streetSlack: 256, poolSlack: 4)
    #expect(outcome.failure == nil)
    // Long enough a run for the pool to outgrow twice the entries (the sanitizer runs are
    // shorter): both kinds of compaction happened.
    if capacity > 0 && Self.operations >= 8 * capacity {
      #expect(outcome.compactions.streets > 0)
      #expect(outcome.compactions.pool > 0)
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

/// Runs CPU-bound `work` off Swift's cooperative pool, one piece of work at a time, at a low
/// priority. The pool has one thread per core (two here): seconds of synchronous work on it,
/// or a dozen such threads at once, would hold up every other test's async code in the
/// process, and their deadline checks with it.
func runOffThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    modelQueue.async { continuation.resume(returning: work()) }
  }
}

/// The one serial queue the model runs share.
private let modelQueue = DispatchQueue(label: "cepis.tests.memo-model", qos: .utility)
