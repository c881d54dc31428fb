import Foundation
import Testing

@testable import Cepis

/// A store the cache can use, made fresh for one test in a folder of its own.
struct StoreUnderTest: Sendable, CustomStringConvertible {
  let description: String
  let make: @Sendable (_ folder: URL) throws -> any CacheStore

  /// Every store: a new one joins the conformance suite with one line here.
  static let all: [StoreUnderTest] =
    [
      StoreUnderTest(description: "memory") { _ in MemoryCacheStore(capacity: 10_000) },
      StoreUnderTest(description: "sqlite") {
        try openStore($0.appendingPathComponent("c.sqlite"))
      },
    ] + traitStores
}

/// What ``AddressCache`` relies on from any ``CacheStore``, checked on each store alike.
///
/// One case at a time: the suite calls the stores' synchronous methods from its tasks, and a
/// server store blocks the calling thread until the server answers, which its client's tasks
/// on the cooperative pool need a free thread for (``AddressCache`` calls a store only from a
/// thread of its own).
@Suite("cache stores: one contract, every store", .serialized)
struct CacheStoreConformanceTests {
  let now = Date(timeIntervalSince1970: 1_790_000_000)

  /// `store` made in a temporary folder, closed and its folder removed afterwards.
  func with(
    _ store: StoreUnderTest, _ body: (any CacheStore) async throws -> Void
  ) async throws {
    try await withTemporaryFolder { folder in
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let made = try store.make(folder)
      defer { made.close() }
      try await body(made)
    }
  }

  /// Entries for `ceps` of `edition`: every third "does not exist".
  func entries(_ ceps: Range<Int>, edition: String, kind: CacheEntryKind = .single)
    -> [CacheEntry]
  {
    ceps.map { cep in
      CacheEntry(
        cep: cep, address: cep % 3 == 0 ? nil : sampleAddress(cep, geo: kind == .single),
        edition: edition, storedAt: now, kind: kind)
    }
  }

  /// `found` holds exactly `expected`, field by field.
  func expectSame(_ found: [Int: CacheEntry], _ expected: [CacheEntry]) {
    #expect(Set(found.keys) == Set(expected.map(\.cep)))
    for entry in expected {
      guard let held = found[entry.cep] else { continue }
      #expect(held.address == entry.address, "CEP \(entry.cep)")
      #expect(held.edition == entry.edition, "CEP \(entry.cep)")
      #expect(held.kind == entry.kind, "CEP \(entry.cep)")
      #expect(abs(held.storedAt.timeIntervalSince(entry.storedAt)) < 0.001, "CEP \(entry.cep)")
    }
  }

  @Test(
    "what is stored is read back, addresses and 'does not exist' alike",
    arguments: StoreUnderTest.all)
  func roundTrip(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      let stored = entries(1_001_000..<1_001_300, edition: "2026-11")
      try cache.store(stored, liveEdition: "2026-11", now: now)
      let asked = Array(1_000_900..<1_001_400)
      expectSame(try cache.entries(for: asked, now: now), stored)
      #expect(try cache.hasEntries(of: "2026-11"))
      #expect(try !cache.hasEntries(of: "2026-12"))
    }
  }

  @Test(
    "a batch answer never replaces a single one of its edition; anything else replaces",
    arguments: StoreUnderTest.all)
  func replacement(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      let single = entries(2_000_000..<2_000_010, edition: "2026-11")
      try cache.store(single, liveEdition: "2026-11", now: now)
      try cache.store(
        entries(2_000_000..<2_000_010, edition: "2026-11", kind: .batch), liveEdition: "2026-11",
        now: now)
      expectSame(try cache.entries(for: Array(2_000_000..<2_000_010), now: now), single)
      // A newer edition's batch answer replaces the single one of the old edition.
      let newer = entries(2_000_000..<2_000_010, edition: "2026-12", kind: .batch)
      try cache.store(newer, liveEdition: "2026-12", now: now)
      expectSame(try cache.entries(for: Array(2_000_000..<2_000_010), now: now), newer)
      // And a single answer replaces a batch one.
      let upgraded = entries(2_000_000..<2_000_010, edition: "2026-12")
      try cache.store(upgraded, liveEdition: "2026-12", now: now)
      expectSame(try cache.entries(for: Array(2_000_000..<2_000_010), now: now), upgraded)
    }
  }

  @Test("the edition mark, the counts per edition, and clear", arguments: StoreUnderTest.all)
  func markStatisticsAndClear(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      #expect(try cache.editionMark() == nil)
      let mark = EditionMark(edition: "2026-11", checkedAt: now)
      try cache.setEditionMark(mark)
      #expect(try cache.editionMark()?.edition == "2026-11")
      let checkedAt = try #require(try cache.editionMark()).checkedAt
      #expect(abs(checkedAt.timeIntervalSince(now)) < 0.001)
      try cache.store(
        entries(3_000_000..<3_000_040, edition: "2026-10"), liveEdition: "2026-11", now: now)
      try cache.store(
        entries(3_100_000..<3_100_060, edition: "2026-11"), liveEdition: "2026-11", now: now)
      let statistics = try cache.statistics()
      #expect(statistics.entriesPerEdition == ["2026-10": 40, "2026-11": 60])
      #expect(statistics.edition?.edition == "2026-11")
      try cache.clear()
      #expect(try cache.statistics().entriesPerEdition.isEmpty)
      #expect(try cache.editionMark() == nil)
      #expect(try cache.entries(for: Array(3_100_000..<3_100_060), now: now).isEmpty)
    }
  }

  @Test(
    "uses noted and a close lose nothing: the store answers the same afterwards",
    arguments: StoreUnderTest.all)
  func noteUsedAndClose(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      let stored = entries(4_000_000..<4_000_100, edition: "2026-11")
      try cache.store(stored, liveEdition: "2026-11", now: now)
      cache.noteUsed(Array(4_000_000..<4_000_050), now: now.addingTimeInterval(60))
      cache.close()
      expectSame(try cache.entries(for: Array(4_000_000..<4_000_100), now: now), stored)
      cache.close()
      #expect(try cache.statistics().entriesPerEdition == ["2026-11": 100])
    }
  }

  @Test(
    "a preload delivers every answer of the edition as the batch path serves it, or says it cannot",
    arguments: StoreUnderTest.all)
  func preload(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      let live = entries(5_000_000..<5_000_250, edition: "2026-11")
      try cache.store(live, liveEdition: "2026-11", now: now)
      try cache.store(
        entries(5_100_000..<5_100_030, edition: "2026-10"), liveEdition: "2026-11", now: now)
      var delivered: [PreloadedAnswer] = []
      var totals: Set<Int> = []
      let complete = try cache.allBatchAnswers(
        edition: "2026-11", limit: 1_000, now: now, batchSize: 64
      ) { answers, total in
        #expect(answers.count <= 64)
        delivered += answers
        totals.insert(total)
        return true
      }
      if complete {
        #expect(totals == [250])
        #expect(delivered.count == 250)
        let byCEP = Dictionary(uniqueKeysWithValues: delivered.map { ($0.cep, $0.address) })
        for entry in live {
          var expected = entry.address
          expected?.geo = nil
          #expect(byCEP[entry.cep] == .some(expected), "CEP \(entry.cep)")
        }
      } else {
        #expect(delivered.isEmpty)
      }
      // Over the limit, nothing is delivered and the answer is `false`.
      var overLimit = 0
      let all = try cache.allBatchAnswers(edition: "2026-11", limit: 100, now: now, batchSize: 64) {
        answers, _ in
        overLimit += answers.count
        return true
      }
      #expect(!all)
      #expect(overLimit == 0)
    }
  }

  @Test(
    "claims: a store that holds them hands each CEP of an edition to one claimer until given up; one that holds none hands every CEP to all",
    arguments: StoreUnderTest.all)
  func claims(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      let ceps = Array(6_000_000..<6_000_050)
      #expect(try cache.claim(ceps, edition: "2026-11", seconds: 30) == Set(ceps))
      let again = try cache.claim(ceps + [6_100_000], edition: "2026-11", seconds: 30)
      guard cache.holdsClaims else {
        #expect(again == Set(ceps + [6_100_000]))
        #expect(try cache.claimsHeld(ceps, edition: "2026-11").isEmpty)
        return
      }
      #expect(again == [6_100_000])
      #expect(try cache.claimsHeld(ceps, edition: "2026-11") == Set(ceps))
      // Claims are per edition.
      #expect(try cache.claim(ceps, edition: "2026-12", seconds: 30) == Set(ceps))
      try cache.releaseClaims(ceps, edition: "2026-11")
      #expect(try cache.claimsHeld(ceps, edition: "2026-11").isEmpty)
      #expect(try cache.claim(ceps, edition: "2026-11", seconds: 30) == Set(ceps))
      // Claims are not entries.
      #expect(try cache.entries(for: ceps, now: now).isEmpty)
      #expect(try cache.statistics().entriesPerEdition.isEmpty)
    }
  }

  @Test(
    "the edition check: a store that holds claims grants it to one claimer until given up; one that holds none grants it to every claimer",
    arguments: StoreUnderTest.all)
  func editionCheckClaim(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      #expect(try cache.claimEditionCheck(seconds: 30))
      let again = try cache.claimEditionCheck(seconds: 30)
      #expect(again == !cache.holdsClaims)
      try cache.releaseEditionCheck()
      #expect(try cache.claimEditionCheck(seconds: 30))
      // The claim is neither an entry nor the edition mark.
      #expect(try cache.editionMark() == nil)
      #expect(try cache.statistics().entriesPerEdition.isEmpty)
    }
  }

  @Test(
    "a read of one edition finds that edition's entries and no other",
    arguments: StoreUnderTest.all)
  func entriesOfOneEdition(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      let older = entries(6_200_000..<6_200_030, edition: "2026-10")
      let live = entries(6_200_030..<6_200_060, edition: "2026-11")
      try cache.store(older + live, liveEdition: "2026-11", now: now)
      let ceps = Array(6_200_000..<6_200_070)
      expectSame(try cache.entries(for: ceps, of: "2026-11", now: now), live)
      expectSame(try cache.entries(for: ceps, of: "2026-10", now: now), older)
      #expect(try cache.entries(for: ceps, of: "2026-12", now: now).isEmpty)
      #expect(try cache.entries(for: [], of: "2026-11", now: now).isEmpty)
    }
  }

  @Test(
    "an awaited read finds what a read waited for finds", arguments: StoreUnderTest.all)
  func awaitedRead(store: StoreUnderTest) async throws {
    try await with(store) { cache in
      let live = entries(6_300_000..<6_300_040, edition: "2026-11")
      try cache.store(live, liveEdition: "2026-11", now: now)
      let ceps = Array(6_300_000..<6_300_050)
      expectSame(try await cache.entriesAwaiting(for: ceps, of: "2026-11", now: now), live)
      #expect(try await cache.entriesAwaiting(for: ceps, of: "2026-10", now: now).isEmpty)
    }
  }
}
