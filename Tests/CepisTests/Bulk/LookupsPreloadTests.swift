import BrazilianDocuments
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// A bulk run that expects at least as many rows as a file cache holds answers of the live
/// edition reads them all in one pass from its start (`LookupAsks.startPreloadIfWorthIt()`),
/// instead of CEP by CEP: the same answers, no request for what the file holds, the same edition rules,
/// and a use noted only for the answers a row took.
@Suite("lookups: the live edition read in one pass, against CepisMock", .serialized)
struct LookupsPreloadTests {
  typealias Answer = LookupAnswer<Customer>

  /// 2,400 existing CEPs and 100 that do not exist (ending in 9), as numbers.
  static let held =
    (0..<2_400).map { 10_000_000 + $0 * 10 } + (0..<100).map { 10_000_009 + $0 * 10 }

  /// Every answer of one iteration over `rows`, expecting `expectedRows` rows.
  static func run(
    _ client: Client, _ rows: [Customer], expectedRows: Int, readAhead: Int? = nil
  ) async throws -> (answers: [Answer], statistics: LookupStatistics) {
    var options = BulkOptions()
    options.expectedRows = expectedRows
    if let readAhead { options.readAhead = readAhead }
    var iterator = client.lookups(AsyncRows(rows), cep: { $0.cep }, options: options)
      .makeAsyncIterator()
    var answers: [Answer] = []
    while let answer = try await iterator.next() { answers.append(answer) }
    return (answers, iterator.statistics)
  }

  /// Fills the file with `held`'s answers: a run that reads the cache CEP by CEP.
  static func fill(_ client: Client, _ server: MockServer) async throws -> [Answer] {
    let rows = LookupsCacheTests.rows(held)
    let first = try await run(client, rows, expectedRows: 0)
    BulkStreamEndToEndTests.check(first.answers, rows, server)
    #expect(first.statistics.preloaded == 0)
    #expect(requests(server, on: .csv).count == 5)
    return first.answers
  }

  @Test(
    "a run expecting more rows than the file holds answers reads them in one pass: no /csv for them",
    arguments: testedTransportKinds)
  func readsTheLiveEditionInOnePass(transport: Transport.Kind) async throws {
    try await withCachedClient(.file, transport) { server, _, client, _ in
      _ = try await Self.fill(client, server)
      // Single lookups keep their `geo` in the file; a bulk run serves those entries without
      // it, as the batch endpoint answers, whether read in one pass or CEP by CEP.
      var withGeo = 0
      for value in Self.held.prefix(6) where try await client.lookup(cepDigits(value)).geo != nil {
        withGeo += 1
      }
      #expect(withGeo > 0)
      // Every held CEP twice, in another order, and 300 the file does not hold.
      let fresh = (0..<300).map { 20_000_000 + $0 * 10 }
      let values = Self.held.reversed() + Self.held + fresh
      let rows = LookupsCacheTests.rows(values)
      let second = try await Self.run(client, rows, expectedRows: rows.count)
      // Every row against the mock's data for its own CEP.
      BulkStreamEndToEndTests.check(second.answers, rows, server)
      #expect(second.answers.allSatisfy { $0.address?.geo == nil })
      #expect(second.statistics.preloaded == Self.held.count)
      #expect(second.statistics.cacheHits == Self.held.count)
      #expect(second.statistics.probed == fresh.count)
      // One more /health (the run's edition check) and one /csv: the 300 CEPs not held.
      #expect(requests(server, on: .health).count == 2)
      let sent = requests(server, on: .csv).dropFirst(5)
      #expect(sent.count == 1)
      let asked = sent.flatMap { ($0.query ?? "").dropFirst("ceps=".count).split(separator: ",") }
      #expect(Set(asked.map(String.init)) == Set(fresh.map(cepDigits)))
    }
  }

  @Test(
    "the pass's answers land while rows are read: each row waits for its own, in any order",
    arguments: testedTransportKinds)
  func answersLandWhileRowsAreRead(transport: Transport.Kind) async throws {
    try await withCachedClient(.file, transport) { server, _, client, _ in
      // 10,000 answers (9,000 addresses, 1,000 CEPs that do not exist): three batches of the
      // pass and part of a fourth, stored by a first run.
      let held =
        (0..<9_000).map { 30_000_000 + $0 * 10 } + (0..<1_000).map { 30_000_009 + $0 * 10 }
      let firstRows = LookupsCacheTests.rows(held)
      let first = try await Self.run(client, firstRows, expectedRows: 0)
      BulkStreamEndToEndTests.check(first.answers, firstRows, server)
      #expect(first.statistics.preloaded == 0)
      let stored = requests(server, on: .csv).count
      #expect(stored == held.count / Client.maxBatch)
      // Every held CEP twice and 700 the file lacks, shuffled: unrelated to the file's order,
      // so most rows come before the batch that holds their answer. 200 rows read ahead.
      var random = SplitMix64(state: 19)
      let fresh = (0..<700).map { 40_000_000 + $0 * 10 }
      let values = (held + held + fresh).shuffled(using: &random)
      let rows = LookupsCacheTests.rows(values)
      let second = try await Self.run(client, rows, expectedRows: rows.count, readAhead: 200)
      // Every row against the mock's data for its own CEP.
      BulkStreamEndToEndTests.check(second.answers, rows, server)
      #expect(second.statistics.preloaded == held.count)
      #expect(second.statistics.cacheHits == held.count)
      // The rows that came before their answer took it from the pass, not from a look-up of
      // their own: only the CEPs the file lacks are looked up in it.
      #expect(second.statistics.probed == fresh.count)
      // Only the CEPs the file lacks are asked, each once, once the pass is over.
      let asked = requests(server, on: .csv).dropFirst(stored).flatMap {
        ($0.query ?? "").dropFirst("ceps=".count).split(separator: ",").map(String.init)
      }
      #expect(asked.count == fresh.count)
      #expect(Set(asked) == Set(fresh.map(cepDigits)))

      // Leaving the loop at the first row stops the pass; the file serves the next run whole.
      let asksSoFar = requests(server, on: .csv).count
      var options = BulkOptions()
      options.expectedRows = rows.count
      for try await answer in client.lookups(AsyncRows(rows), cep: { $0.cep }, options: options) {
        #expect(answer.row.id == 0)
        break
      }
      let third = try await Self.run(client, rows, expectedRows: rows.count)
      BulkStreamEndToEndTests.check(third.answers, rows, server)
      #expect(third.statistics.preloaded == held.count + fresh.count)
      #expect(third.statistics.probed == 0)
      #expect(requests(server, on: .csv).count == asksSoFar)
    }
  }

  @Test(
    "a run expecting fewer rows than the file holds answers reads it CEP by CEP, with the same answers",
    arguments: testedTransportKinds)
  func fewerRowsThanHeldReadsByCEP(transport: Transport.Kind) async throws {
    try await withCachedClient(.file, transport) { server, _, client, _ in
      let first = try await Self.fill(client, server)
      let rows = LookupsCacheTests.rows(Self.held)
      // One row fewer than the file holds answers, and a run of unknown length.
      for expected in [Self.held.count - 1, 0] {
        let again = try await Self.run(client, rows, expectedRows: expected)
        #expect(again.statistics.preloaded == 0)
        #expect(again.statistics.cacheHits == Self.held.count)
        #expect(again.answers.map(\.result) == first.map(\.result))
      }
      #expect(requests(server, on: .csv).count == 5)
      // Exactly as many rows as held answers: read in one pass.
      let exact = try await Self.run(client, rows, expectedRows: Self.held.count)
      #expect(exact.statistics.preloaded == Self.held.count)
      #expect(exact.answers.map(\.result) == first.map(\.result))
      #expect(requests(server, on: .csv).count == 5)
    }
  }

  @Test(
    "another edition's answers are never read in one pass: a new edition asks everything",
    arguments: testedTransportKinds)
  func anotherEditionIsNotPreloaded(transport: Transport.Kind) async throws {
    try await withCachedClient(.file, transport) { server, _, client, _ in
      let first = try await Self.fill(client, server)
      server.setEdition("2026-12")
      let rows = LookupsCacheTests.rows(Self.held)
      let renewed = try await Self.run(client, rows, expectedRows: 10 * rows.count)
      #expect(renewed.statistics.preloaded == 0)
      #expect(renewed.statistics.cacheHits == 0)
      #expect(requests(server, on: .csv).count == 10)
      #expect(renewed.answers.map(\.result) == first.map(\.result))
      // The new edition's answers, now held, are read in one pass by the next run.
      let next = try await Self.run(client, rows, expectedRows: rows.count)
      #expect(next.statistics.preloaded == Self.held.count)
      #expect(requests(server, on: .csv).count == 10)

      // Two editions in the file: only the live one's answers are read in one pass.
      server.setEdition("2027-01")
      let part = LookupsCacheTests.rows(Self.held.prefix(500))
      _ = try await Self.run(client, part, expectedRows: 0)
      #expect(requests(server, on: .csv).count == 11)
      let mixed = try await Self.run(client, rows, expectedRows: rows.count)
      BulkStreamEndToEndTests.check(mixed.answers, rows, server)
      #expect(mixed.statistics.preloaded == 500)
      #expect(mixed.statistics.cacheHits == 500)
      #expect(requests(server, on: .csv).count == 15)
    }
  }

  @Test(
    "an answer read in one pass counts as used in the file only when a row takes it",
    arguments: testedTransportKinds)
  func onlyAnswersTakenAreNotedUsed(transport: Transport.Kind) async throws {
    let clock = ManualClock()
    try await withCachedClient(.file, transport, clock: clock) { server, cache, client, folder in
      _ = try await Self.fill(client, server)
      let start = Int64(clock.now.timeIntervalSince1970)
      clock.advance(120)
      // The first 1,000 held CEPs, three rows each: enough rows to read the file in one pass.
      let used = Array(Self.held.prefix(1_000))
      let rows = LookupsCacheTests.rows(used + used + used)
      let second = try await Self.run(client, rows, expectedRows: rows.count)
      BulkStreamEndToEndTests.check(second.answers, rows, server)
      #expect(second.statistics.preloaded == Self.held.count)
      #expect(second.statistics.cacheHits == used.count)
      // Uses are written with the file's next transaction: a lookup that stores an answer.
      _ = try await client.lookup("20040020")
      await cache.close()
      let usedAt = try usedAtByCEP(folder.appendingPathComponent("cache.sqlite"))
      #expect(usedAt.count == Self.held.count + 1)  // and 20040020
      let taken = Set(used)
      let wrong = Self.held.filter { usedAt[$0] != (taken.contains($0) ? start + 120 : start) }
      #expect(wrong.count == 0, "recency not as used, first: \(String(describing: wrong.first))")
    }
  }

  @Test(
    "lookupMany of as many CEPs as the file holds reads it in one pass",
    arguments: testedTransportKinds)
  func lookupManyPreloads(transport: Transport.Kind) async throws {
    try await withCachedClient(.file, transport) { server, _, client, _ in
      let first = try await Self.fill(client, server)
      let found = try await client.lookupMany(Self.held.map(cepDigits))
      #expect(found == first.map(\.address))
      #expect(requests(server, on: .csv).count == 5)
      #expect(requests(server, on: .health).count == 2)
    }
  }
}
