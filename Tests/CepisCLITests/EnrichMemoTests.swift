import Cepis
import Testing

@testable import CepisCommandLine

@Suite("enrich memo")
struct EnrichMemoTests {
  static func address(_ cep: Int, street: String, bairro: String = "Centro") -> Address {
    Address(
      cep: String(cep), logradouro: street, complemento: cep % 3 == 0 ? "lado par" : "",
      bairro: bairro, localidade: "São Paulo", uf: "SP", ibge: "3550308")
  }

  /// What the memo answers for `cep` now, or `nil`.
  static func answer(_ memo: inout EnrichMemo, _ cep: Int) -> String? {
    guard let entry = memo.recall(cep) else { return nil }
    var bytes: [UInt8] = []
    _ = memo.appendAnswer(entry, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  static func rendered(_ address: Address?) -> String {
    var bytes: [UInt8] = []
    EnrichMemo.render(address, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  @Test func answersAreTheFieldsAsEnrichWritesThem() {
    var memo = EnrichMemo(capacity: 10)
    let quoted = Address(
      cep: "01001000", logradouro: "Rua \"A\", 1", complemento: "de 1, a 9",
      bairro: "Sé", localidade: "São Paulo", uf: "SP", ibge: "3550308")
    var out: [UInt8] = []
    memo.insert(1_001_000, quoted, appendingTo: &out) { _ in Issue.record("nothing evicted") }
    let expected = ",\"Rua \"\"A\"\", 1\",\"de 1, a 9\",Sé,São Paulo,SP,3550308,ok"
    #expect(String(decoding: out, as: UTF8.self) == expected)
    #expect(Self.answer(&memo, 1_001_000) == expected)

    out = []
    memo.insert(99_999_999, nil, appendingTo: &out) { _ in Issue.record("nothing evicted") }
    #expect(String(decoding: out, as: UTF8.self) == ",,,,,,,not_found")
    var bytes: [UInt8] = []
    let status = memo.recall(99_999_999).map { memo.appendAnswer($0, to: &bytes) }
    #expect(status == .notFound)
    #expect(String(decoding: bytes, as: UTF8.self) == ",,,,,,,not_found")
    #expect(Self.answer(&memo, 1_001_001) == nil)
    // A town-wide CEP: no street, no complemento.
    let town = Address(cep: "12345000", localidade: "Taubaté", uf: "SP")
    out = []
    memo.insert(12_345_000, town, appendingTo: &out) { _ in }
    #expect(Self.answer(&memo, 12_345_000) == ",,,,Taubaté,SP,,ok")
    #expect(memo.count == 3)
  }

  @Test func theLeastRecentlyUsedIsEvictedAndTheBoundHolds() {
    var memo = EnrichMemo(capacity: 3)
    var evicted: [Int] = []
    var sink: [UInt8] = []
    for cep in [10, 20, 30] {
      memo.insert(cep, Self.address(cep, street: "Rua \(cep)"), appendingTo: &sink) {
        evicted.append($0)
      }
    }
    #expect(evicted.isEmpty)
    _ = memo.recall(10)  // 20 is now the least recently used
    memo.insert(40, Self.address(40, street: "Rua 40"), appendingTo: &sink) { evicted.append($0) }
    #expect(evicted == [20])
    #expect(memo.count == 3)
    let kept = [10, 20, 30, 40].filter { memo.contains($0) }
    #expect(kept == [10, 30, 40])
    memo.insert(50, nil, appendingTo: &sink) { evicted.append($0) }
    #expect(evicted == [20, 30])
    #expect(Self.answer(&memo, 10) == Self.rendered(Self.address(10, street: "Rua 10")))
    #expect(memo.evictions == 2)
  }

  @Test func nothingIsKeptWithCapacityZero() {
    var memo = EnrichMemo(capacity: 0)
    var forgotten: [Int] = []
    var out: [UInt8] = []
    let address = Self.address(7, street: "Rua Sete")
    memo.insert(7, address, appendingTo: &out) { forgotten.append($0) }
    #expect(forgotten == [7])
    #expect(String(decoding: out, as: UTF8.self) == Self.rendered(address))
    #expect(memo.count == 0)
    #expect(memo.recall(7) == nil)
  }

  /// Streets that outgrow their slots leave garbage behind, and bairros that never repeat
  /// fill the pool: both are compacted, and every answer kept stays right.
  @Test func compactionKeepsEveryAnswerRight() {
    let capacity = 500
    var memo = EnrichMemo(capacity: capacity)
    var truth: [Int: Address?] = [:]
    var order: [Int] = []
    var evicted = 0
    var sink: [UInt8] = []
    var compactions = memo.compactions
    var checks = 0
    for step in 0..<40_000 {
      let cep = 10_000_000 + step
      // Odd steps' streets grow through the run: their slots keep moving to larger ones.
      let street = "Rua " + String(repeating: "x", count: step % 2 == 0 ? 5 : step / 100)
      let address: Address? =
        step % 11 == 0 ? nil : Self.address(cep, street: street, bairro: "Bairro \(step)")
      memo.insert(cep, address, appendingTo: &sink) { _ in evicted += 1 }
      sink.removeAll(keepingCapacity: true)
      truth[cep] = address
      order.append(cep)
      guard memo.compactions != compactions else { continue }
      compactions = memo.compactions
      // Right after a compaction: every answer kept (recalled oldest first, so that the
      // order of recency stays the order of insertion).
      checks += 1
      for kept in order.suffix(capacity) {
        #expect(Self.answer(&memo, kept) == Self.rendered(truth[kept] ?? nil), "CEP \(kept)")
      }
    }
    #expect(memo.count == capacity)
    #expect(evicted == 40_000 - capacity)
    #expect(checks > 2)
    #expect(Self.answer(&memo, order[0]) == nil)
    #expect(memo.compactions.streets > 0)
    #expect(memo.compactions.pool > 0)
  }

  @Test func cepSetCountsDistinctMembers() {
    let set = CEPSet()
    #expect(!set.contains(0))
    for value in stride(from: 0, to: 100_000_000, by: 99_991) { set.insert(value) }
    #expect(set.count == 1_001)
    #expect(!set.insert(-1) && !set.insert(100_000_000) && !set.contains(100_000_000))
    let insertedAgain = set.insert(99_991)
    #expect(!insertedAgain)
    #expect(set.contains(0) && set.contains(99_991 * 1_000))
    #expect(!set.contains(1))
    #expect(set.count == 1_001)
  }
}
