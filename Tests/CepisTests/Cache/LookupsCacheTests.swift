import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("lookups and lookupMany through the cache, against CepisMock", .serialized)
struct LookupsCacheTests {
  typealias Answer = LookupAnswer<Customer>

  /// Rows of `values` (CEPs as numbers), eight digits each.
  static func rows(_ values: some Sequence<Int>) -> [Customer] {
    values.enumerated().map { Customer(id: $0.offset, cep: cepDigits($0.element)) }
  }

  /// Every answer of one iteration over `rows`, and what it spent.
  static func run(_ client: Client, _ rows: [Customer]) async throws -> (
    answers: [Answer], statistics: LookupStatistics
  ) {
    var iterator = client.lookups(AsyncRows(rows), cep: { $0.cep }).makeAsyncIterator()
    var answers: [Answer] = []
    while let answer = try await iterator.next() { answers.append(answer) }
    return (answers, iterator.statistics)
  }

  /// The number of requests the server saw on `route`.
  static func count(_ server: MockServer, _ route: MockRoute) -> Int {
    requests(server, on: route).count
  }

  @Test(
    "when a run ends, every answer is in the file: another process reads them at once",
    arguments: testedTransportKinds)
  func runEndsWithAnswersWritten(transport: Transport.Kind) async throws {
    try await withCachedClient(.file, transport) { server, cache, client, folder in
      // Distinct CEPs enough for many chunks, so that stores queue behind the requests.
      let values = (0..<12_000).map { 1_000_000 + $0 * 7_919 }
      let first = try await Self.run(client, Self.rows(values))
      #expect(first.statistics.requests == 24)
      // Another connection to the file, as another process would open it.
      let reader = try openStore(folder.appendingPathComponent("cache.sqlite"))
      let held = try reader.entries(for: values, now: Date())
      reader.close()
      #expect(held.count == values.count)
      for (answer, value) in zip(first.answers, values) {
        #expect(held[value]?.address == answer.address, "CEP \(value)")
      }
    }
  }

  @Test(
    "a second run over the same CEPs sends one /health and no /csv, and answers the same",
    arguments: testedTransportKinds, CacheKind.allCases)
  func secondRunAsksNothing(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withCachedClient(kind, transport) { server, cache, client, _ in
      let rows = BulkStreamEndToEndTests.customers()
      let distinct = BulkStreamEndToEndTests.distinctValid(rows).count
      let first = try await Self.run(client, rows)
      BulkStreamEndToEndTests.check(first.answers, rows, server)
      let chunks = (distinct + Client.maxBatch - 1) / Client.maxBatch
      #expect(Self.count(server, .csv) == chunks)
      #expect(Self.count(server, .health) == 1)
      #expect(first.statistics.requests == chunks)
      #expect(first.statistics.cacheHits == 0)

      // Another client on the same cache, as another run would be.
      let second = try await Self.run(cachedClient(server, transport, cache: cache), rows)
      #expect(Self.count(server, .csv) == chunks)
      #expect(Self.count(server, .health) == 2)
      #expect(second.answers.map(\.row) == rows)
      #expect(second.answers.map(\.result) == first.answers.map(\.result))
      #expect(second.answers.allSatisfy { $0.address?.staleEdition == nil })
      #expect(second.statistics.requests == 0)
      #expect(second.statistics.cacheHits == distinct)
      #expect(cache.warnings.isEmpty)
    }
  }

  @Test(
    "a partly cached run sends only the CEPs the cache does not hold",
    arguments: testedTransportKinds, CacheKind.allCases)
  func partlyCachedSendsOnlyTheRest(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withCachedClient(kind, transport) { server, cache, client, _ in
      // 1,000 CEPs (two full chunks), then 700 more in a later run.
      let cached = (0..<1_000).map { 10_000_000 + $0 * 10 }
      let fresh = (1_000..<1_700).map { 10_000_000 + $0 * 10 }
      _ = try await Self.run(client, Self.rows(cached))
      #expect(Self.count(server, .csv) == 2)

      // Held and new CEPs interleaved: requests carry only the new ones, 500 to a request.
      var mixed: [Int] = []
      for index in cached.indices {
        mixed.append(cached[index])
        if index < fresh.count { mixed.append(fresh[index]) }
      }
      let rows = Self.rows(mixed)
      let second = try await Self.run(client, rows)
      BulkStreamEndToEndTests.check(second.answers, rows, server)
      let sent = requests(server, on: .csv).dropFirst(2)
      let asked = sent.flatMap { ($0.query ?? "").dropFirst("ceps=".count).split(separator: ",") }
      #expect(sent.count == (fresh.count + Client.maxBatch - 1) / Client.maxBatch)
      #expect(Set(asked.map(String.init)) == Set(fresh.map(cepDigits)))
      #expect(asked.count == fresh.count)
      #expect(second.statistics.cacheHits == cached.count)
      #expect(second.statistics.requests == sent.count)
    }
  }

  @Test(
    "a new edition asks everything again; not-found is cached per edition",
    arguments: testedTransportKinds, CacheKind.allCases)
  func editionChangeAsksAgain(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withCachedClient(kind, transport) { server, cache, client, _ in
      // Existing CEPs and CEPs that end in 9 (they do not exist in the mock).
      let rows = Self.rows(
        (0..<300).map { 10_000_000 + $0 * 10 } + (0..<50).map { 10_000_009 + 10 * $0 })
      let first = try await Self.run(client, rows)
      BulkStreamEndToEndTests.check(first.answers, rows, server)
      #expect(first.answers.contains { $0.result == .success(nil) })
      #expect(Self.count(server, .csv) == 1)

      let again = try await Self.run(client, rows)
      #expect(again.answers.map(\.result) == first.answers.map(\.result))
      #expect(Self.count(server, .csv) == 1)

      server.setEdition("2026-12")
      let renewed = try await Self.run(client, rows)
      #expect(Self.count(server, .csv) == 2)
      #expect(Self.count(server, .health) == 3)
      let asked = (requests(server, on: .csv).last?.query ?? "").split(separator: ",")
      #expect(asked.count == rows.count)
      #expect(renewed.answers.map(\.result) == first.answers.map(\.result))
      #expect(renewed.statistics.cacheHits == 0)
    }
  }

  @Test(
    "a failing /csv: kept addresses answer, marked stale; not-found and the rest fail",
    arguments: testedTransportKinds, CacheKind.allCases)
  func failingChunkServesStale(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withCachedClient(kind, transport) { server, cache, client, _ in
      let existing = (0..<200).map { 10_000_000 + $0 * 10 }
      let missing = (0..<20).map { 10_000_009 + 10 * $0 }
      let first = try await Self.run(client, Self.rows(existing + missing))
      #expect(Self.count(server, .csv) == 1)

      server.setEdition("2026-12")
      server.setMode(.csv, [.status(503)])
      let unseen = (200..<260).map { 10_000_000 + $0 * 10 }
      let rows = Self.rows(existing + missing + unseen)
      let second = try await Self.run(client, rows)
      #expect(second.answers.map(\.row) == rows)
      for (index, answer) in second.answers.enumerated() {
        if index < existing.count {
          let kept = try #require(first.answers[index].address)
          let stale = try #require(answer.address, "row \(index)")
          #expect(stale.staleEdition == "2026-11")
          var unmarked = stale
          unmarked.staleEdition = nil
          #expect(unmarked == kept)
          #expect(unmarked.cep == answer.row.cep)
        } else {
          guard case .failure(let error) = answer.result else {
            Issue.record("row \(index) (\(answer.row.cep)): \(answer.result), expected a failure")
            continue
          }
          #expect(error != .invalidCEP("invalid CEP"))
        }
      }
      #expect(second.statistics.cacheHits == 0)
    }
  }

  @Test(
    "through the cache, every row gets its own CEP's answer: a server that reorders, repeats or omits rows, a small memo and read-ahead",
    arguments: testedTransportKinds, CacheKind.allCases)
  func rowsKeepTheirOwnAnswers(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withCachedClient(kind, transport) { server, cache, client, _ in
      let rows = BulkStreamEndToEndTests.customers()
      // Half the CEPs cached first, through a server that shuffles its answers.
      server.setMode(.csv, [.csvReordered, .csvDuplicatedRows, .csvExtraRows, .csvOmitMissing])
      let half = Array(rows.prefix(rows.count / 2))
      BulkStreamEndToEndTests.check(try await Self.run(client, half).answers, half, server)
      // Every row, with a memo of 50 CEPs and a read-ahead of 700 rows: asks are probed,
      // missed, re-queued and asked again as the memo forgets them.
      let options = BulkOptions(memoCapacity: 50, readAhead: 700, chunksInFlight: 3)
      var answers: [Answer] = []
      for try await answer in client.lookups(AsyncRows(rows), cep: { $0.cep }, options: options) {
        answers.append(answer)
      }
      BulkStreamEndToEndTests.check(answers, rows, server)
      // And once more, the cache answering everything.
      let again = try await Self.run(client, rows)
      #expect(again.answers.map(\.result) == answers.map(\.result))
      #expect(again.statistics.requests == 0)
    }
  }

  /// A run over `values` whose input stays open: its first `values.count` answers (one
  /// chunk), read with the read-ahead full so that the engine does not wait for more rows.
  static func pausedRun(_ client: Client, _ values: [Int]) async throws -> (
    answers: [Answer], input: AsyncStream<Customer>.Continuation,
    rest: LookupStream<AsyncStream<Customer>>.Iterator
  ) {
    let (input, feed) = AsyncStream.makeStream(of: Customer.self)
    for row in rows(values) { feed.yield(row) }
    let options = BulkOptions(readAhead: values.count)
    var iterator = client.lookups(input, cep: { $0.cep }, options: options).makeAsyncIterator()
    var answers: [Answer] = []
    for _ in values {
      guard let answer = try await iterator.next() else { break }
      answers.append(answer)
    }
    return (answers, feed, iterator)
  }

  @Test(
    "while a run waits for more rows, the answers it has are written to the file within the flush delay",
    arguments: testedTransportKinds)
  func waitingRunWritesWithinTheDelay(transport: Transport.Kind) async throws {
    try await withCachedClient(.file, transport, flushDelay: .milliseconds(100)) {
      server, _, client, folder in
      // One chunk: far fewer answers than a group, so only the delay writes them.
      let values = (0..<Client.maxBatch).map { 2_000_000 + $0 * 7_919 }
      var run = try await Self.pausedRun(client, values)
      #expect(run.answers.count == values.count)
      #expect(Self.count(server, .csv) == 1)
      let reader = try openStore(folder.appendingPathComponent("cache.sqlite"))
      defer { reader.close() }
      var held: [Int: CacheEntry] = [:]
      let deadline = ContinuousClock.now + .seconds(20)
      while held.count < values.count, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
        held = try reader.entries(for: values, now: Date())
      }
      #expect(held.count == values.count)
      for (answer, value) in zip(run.answers, values) {
        #expect(held[value]?.address == answer.address, "CEP \(value)")
      }
      run.input.finish()
      while try await run.rest.next() != nil {}
    }
  }

  @Test(
    "answers stored and not yet written are read by the next use of the cache: a second run asks no /csv",
    arguments: testedTransportKinds)
  func unwrittenAnswersServeTheNextRun(transport: Transport.Kind) async throws {
    // A delay no test waits for: only the write before the next read can help.
    try await withCachedClient(.file, transport, flushDelay: .seconds(3_600)) {
      server, cache, client, _ in
      let values = (0..<Client.maxBatch).map { 3_000_000 + $0 * 7_919 }
      var run = try await Self.pausedRun(client, values)
      #expect(Self.count(server, .csv) == 1)
      // Another run on the same cache while the first one still waits for rows.
      let second = try await Self.run(
        cachedClient(server, transport, cache: cache), Self.rows(values))
      #expect(Self.count(server, .csv) == 1)
      #expect(second.statistics.requests == 0)
      #expect(second.statistics.cacheHits == values.count)
      #expect(second.answers.map(\.result) == run.answers.map(\.result))
      run.input.finish()
      while try await run.rest.next() != nil {}
      #expect(cache.warnings.isEmpty)
    }
  }

  @Test("without a cache, no /health request is made", arguments: testedTransportKinds)
  func noCacheNoHealth(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = cachedClient(server, transport, cache: nil)
      let rows = BulkStreamEndToEndTests.customers()
      let first = try await Self.run(client, rows)
      BulkStreamEndToEndTests.check(first.answers, rows, server)
      _ = try await client.lookupMany(rows.map(\.cep))
      _ = try await client.lookupMany(["01001000"])
      #expect(Self.count(server, .health) == 0)
      #expect(first.statistics.cacheHits == 0)
    }
  }

  @Test(
    "lookupMany: one chunk checks the edition only when it is due; several chunks check it each call",
    arguments: testedTransportKinds, CacheKind.allCases)
  func lookupManyEditionChecks(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withCachedClient(kind, transport) { server, cache, client, _ in
      let few = (0..<100).map { cepDigits(10_000_000 + $0 * 10) }
      let first = try await client.lookupMany(few)
      let again = try await client.lookupMany(few + few)
      #expect(again == first + first)
      #expect(first.map { $0?.cep } == few.map { expectedAddress(server, $0)?.cep })
      #expect(Self.count(server, .health) == 1)
      #expect(Self.count(server, .csv) == 1)

      let many = (0..<800).map { cepDigits(10_000_000 + $0 * 10) }
      let all = try await client.lookupMany(many)
      #expect(all.map { $0?.cep } == many.map { expectedAddress(server, $0)?.cep })
      #expect(Self.count(server, .health) == 2)
      let cachedAgain = try await client.lookupMany(many)
      #expect(cachedAgain == all)
      #expect(Self.count(server, .health) == 3)
      #expect(Self.count(server, .csv) == 1 + 2)
    }
  }
}
