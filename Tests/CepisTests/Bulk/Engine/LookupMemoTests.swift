import BrazilianDocuments
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// `LookupMemo` against the plainest LRU there is: a dictionary of answers and one of last-use
/// stamps, the smallest stamp evicted. Seeded random inserts, re-inserts, recalls and
/// evictions, compared step by step. CI runs a bounded number of operations per capacity;
/// `CEPIS_LOOKUP_MEMO_OPS` sets another (`CEPIS_LOOKUP_MEMO_OPS=10000000 swift test -c release
/// -Xswiftc -enable-testing --filter LookupMemoTests`).
@Suite("lookups memo against its reference model")
struct LookupMemoTests {
  static let operations =
    ProcessInfo.processInfo.environment["CEPIS_LOOKUP_MEMO_OPS"].flatMap(Int.init) ?? 50_000

  struct Reference {
    let capacity: Int
    var answers: [Int: Address?] = [:]
    var stamps: [Int: Int] = [:]
    /// CEPs asked and not answered, with their ask.
    var waiting: [Int: Int32] = [:]
    var clock = 0

    mutating func state(of cep: Int, orWaitFor ask: Int32) -> String {
      if let ask = waiting[cep] { return "waiting \(ask)" }
      if let answer = self.answer(for: cep) {
        return "answered \(fields(of: answer))"
      }
      waiting[cep] = ask
      return "unknown"
    }

    mutating func answer(for cep: Int) -> Address?? {
      guard let answer = answers[cep] else { return nil }
      clock += 1
      stamps[cep] = clock
      return .some(answer)
    }

    mutating func keep(_ answer: Address?, for cep: Int) -> Int? {
      waiting[cep] = nil
      guard capacity > 0 else { return nil }
      var forgotten: Int?
      if answers[cep] == nil && answers.count == capacity {
        let oldest = stamps.min { $0.value < $1.value }!.key
        answers[oldest] = nil
        stamps[oldest] = nil
        forgotten = oldest
      }
      clock += 1
      answers[cep] = .some(answer)
      stamps[cep] = clock
      return forgotten
    }

    var oldestFirst: [Int] { stamps.sorted { $0.value < $1.value }.map(\.key) }
  }

  /// Rows in each shared chunk of the model run's packed answers.
  static let rowsPerChunk = 4

  /// A batch answer's chunk, written a row at a time, as the decoder writes one.
  struct ChunkOfRows {
    var writer: PackedChunkWriter

    init(rows: Int) {
      writer = PackedChunkWriter(rows: rows, textBytes: rows * 64)
    }

    var isFull: Bool { writer.rows == writer.rowCapacity }

    /// `address` as a row of this chunk.
    mutating func add(_ address: Address) -> Address {
      writer.appendFields(of: address)
      return Address(cepNumber: Int(address.cep)!, packed: writer.endRow())
    }
  }

  // 5,000: the memo's array fills past its first 4,096 entries and makes room for the rest.
  @Test(arguments: [0, 1, 2, 7, 64, 1_000, 5_000])
  func agreesWithTheReferenceAtEveryStep(capacity: Int) async {
    // Seconds of synchronous work: off the cooperative pool (where it would hold up every
    // other test's async code), one capacity at a time, at a low priority.
    let failure = await runOffThePool { Self.check(capacity: capacity) }
    #expect(failure == nil)
  }

  /// The same sequence with the memo's count of answers kept starting just before it wraps:
  /// at 2³¹, where an entry's age (31 bits) wraps, and at 2³², where the count itself does.
  /// Ages read wrong would re-pack rows too late (caught by the check of the chunks held) or
  /// answer differently.
  @Test(arguments: [(7, UInt32(1) << 31 - 300), (64, UInt32.max - 3_000)])
  func agesAcrossTheWrapOfTheCount(capacity: Int, keptBefore: UInt32) async {
    let failure = await runOffThePool {
      Self.check(capacity: capacity, memo: LookupMemo(capacity: capacity, keptBefore: keptBefore))
    }
    #expect(failure == nil)
  }

  /// Runs the seeded sequence for `capacity` (on `memo`, by default a new one); the first
  /// difference, or `nil`.
  static func check(capacity: Int, memo: LookupMemo? = nil) -> String? {
    var memo = memo ?? LookupMemo(capacity: capacity)
    var reference = Reference(capacity: capacity)
    var random = SplitMix64(state: 0x18_0000 &+ UInt64(capacity))
    let keySpace = UInt64(2 * capacity + 5)
    // The largest capacity evicts on a third of its operations, each a scan of the reference:
    // fewer operations there.
    let operations = capacity >= 1_000 ? Self.operations / 4 : Self.operations
    var evictions = 0
    var nextAsk: Int32 = 0
    // The entry each waiting CEP took (as the engine keeps it in its ask's slot): answers and
    // failed asks go by entry, as in the engine, or by CEP, at random.
    var entries: [Int: Int32] = [:]
    // Half the answers are rows of shared chunks of `rowsPerChunk`, as a batch answer's are:
    // the memo must answer them as the reference does, and hold only recent chunks.
    var chunk = ChunkOfRows(rows: Self.rowsPerChunk)
    /// When each CEP's answer held as a shared chunk's row was kept.
    var keptPackedAt: [Int: Int] = [:]
    var keeps = 0
    for step in 0..<operations {
      let cep = Int(random.next() % keySpace) * 9_973
      switch random.next() % 10 {
      case 8:
        // A row's probe: its CEP's answer, the ask it waits for, or (unknown) a new ask.
        let got: String
        switch memo.state(of: cep, orWaitFor: nextAsk) {
        case .answered(let answer): got = "answered \(fields(of: answer.address))"
        case .waiting(let ask): got = "waiting \(ask)"
        case .unknown(let entry):
          got = "unknown"
          entries[cep] = entry
        }
        let expected = reference.state(of: cep, orWaitFor: nextAsk)
        guard got == expected else {
          return "step \(step): state of \(cep) is \(got), not \(expected)"
        }
        if got == "unknown" { nextAsk += 1 }
      case 9:
        // An ask that failed: its CEP is no longer waited for; an answer kept stays.
        if let entry = entries.removeValue(forKey: cep), random.next() % 2 == 0 {
          memo.stopWaiting(entry: entry)
        } else {
          memo.stopWaiting(for: cep)
        }
        reference.waiting[cep] = nil
      case 0..<5:
        var answer: Address? =
          random.next() % 8 == 0
          ? nil : Address(cep: cepString(cep), logradouro: "Rua \(step)", localidade: "X", uf: "SP")
        if let plain = answer, random.next() % 2 == 0 {
          if chunk.isFull {
            chunk = ChunkOfRows(rows: Self.rowsPerChunk)
          }
          answer = chunk.add(plain)
          keptPackedAt[cep] = keeps
        }
        // Only a CEP newly answered counts: the memo's bound is in those.
        if reference.answers[cep] == nil { keeps += 1 }
        // Reading ahead what keeps will forget changes nothing the memo answers (any count,
        // more keeps than it holds included).
        if random.next() % 3 == 0 { memo.readAheadForgetting(Int(random.next() % 8)) }
        let forgotten: Int?
        if let entry = entries.removeValue(forKey: cep), random.next() % 4 != 0 {
          forgotten = memo.keep(answer.map(LookupResult.init(found:)) ?? .notFound, entry: entry)
        } else {
          forgotten = memo.keep(answer, for: cep)
        }
        let expected = reference.keep(answer, for: cep)
        if forgotten != nil { evictions += 1 }
        guard forgotten == expected else {
          return "step \(step): keep \(cep) forgot \(String(describing: forgotten)), not "
            + String(describing: expected)
        }
      default:
        let got = memo.answer(for: cep)
        let expected = reference.answer(for: cep)
        guard got == expected else {
          return "step \(step): answer for \(cep) is \(String(describing: got)), not "
            + String(describing: expected)
        }
      }
      guard memo.count == reference.answers.count else {
        return "step \(step): \(memo.count) held, not \(reference.answers.count)"
      }
      if step % 997 == 0 || capacity <= 7 {
        guard memo.cepsOldestFirst == reference.oldestFirst else {
          return "step \(step): the order of recency differs"
        }
        // A shared chunk's row that the memo holds was kept within its last 2 × capacity
        // CEPs answered: older ones are re-packed on their own when used, or forgotten.
        for (cep, answer) in memo.heldAnswers {
          guard case .found(let address) = answer, address.chunkIdentity != nil else { continue }
          let age = keeps - (keptPackedAt[cep] ?? 0)
          guard age <= 2 * capacity + 1 else {
            return "step \(step): the memo holds a shared chunk's row kept \(age) answers ago"
          }
        }
      }
    }
    // Past its first 4,096 entries, the array made room for every entry the memo can hold at
    // once (no doubling after that).
    let counts = memo.entryCounts
    if counts.made > 4_096 && counts.made <= counts.roomAtOnce && counts.room < counts.roomAtOnce {
      return "\(counts.made) entries in an array of room \(counts.room), not \(counts.roomAtOnce)"
    }
    guard memo.evictions == evictions else {
      return "\(memo.evictions) evictions counted, \(evictions) seen"
    }
    // A run long enough to fill the memo must have evicted (the sanitizers' short runs of the
    // largest capacity cannot fill it).
    if capacity > 0 && evictions == 0 && operations >= 4 * capacity {
      return "no eviction: the sequence did not exercise it"
    }
    return nil
  }
}

/// An answer's fields and source, as `==` compares them: the same text for a batch row and for
/// its copy re-packed on its own (the reflection of an `Address` shows how it is stored).
private func fields(of address: Address?) -> String {
  guard let address else { return "nil" }
  return [
    address.cep, address.logradouro, address.complemento, address.bairro, address.localidade,
    address.uf, address.ibge, "\(address.source)", "\(String(describing: address.geo))",
    address.staleEdition ?? "current",
  ].joined(separator: "|")
}
