import CepisMock
import CepisSupport
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// Rows of a caller's own type, as a data team would have them.
struct Customer: Sendable, Equatable {
  var id: Int
  var cep: String
}

/// An input that counts the rows read from it and can throw after a given row.
struct CountingRows: AsyncSequence, Sendable {
  typealias Element = Customer
  struct InputBroke: Error, Equatable {}

  let rows: [Customer]
  let read: RowCounter
  var throwAfter: Int?
  /// Awaited before the row at `index` is given: lets a test order what the engine does.
  var pause: (index: Int, until: @Sendable () async throws -> Void)?

  func makeAsyncIterator() -> Iterator { Iterator(source: self) }

  struct Iterator: AsyncIteratorProtocol {
    let source: CountingRows
    var index = 0

    mutating func next() async throws -> Customer? {
      if let limit = source.throwAfter, index == limit { throw InputBroke() }
      if let pause = source.pause, index == pause.index { try await pause.until() }
      guard index < source.rows.count else { return nil }
      defer { index += 1 }
      source.read.add(1)
      return source.rows[index]
    }
  }
}

/// A counter shared between an input and the test.
final class RowCounter: Sendable {
  private let value = LockedValue(0)
  func add(_ amount: Int) { value.withLock { $0 += amount } }
  var current: Int { value.withLock { $0 } }
}

@Suite("lookups: a stream of answers, one per row, against CepisMock", .serialized)
struct BulkStreamEndToEndTests {
  /// 3,000 rows: 1,200 distinct existing CEPs (masked and not), repeats near and far, CEPs
  /// that do not exist, malformed ones.
  static func customers() -> [Customer] {
    var rows: [Customer] = []
    for index in 0..<3_000 {
      let cep: String
      switch index % 10 {
      case 3: cep = "bad-\(index)"
      case 5: cep = String(10_000_009 + 10 * (index % 40))  // ends in 9: does not exist
      case 7: cep = rows[index / 3].cep  // a repeat
      default:
        let value = 10_000_000 + (index * 7_919) % 1_200 * 17
        cep = index % 4 == 0 ? "\(value / 1_000)-\(String(value).suffix(3))" : String(value)
      }
      rows.append(Customer(id: index, cep: cep))
    }
    return rows
  }

  /// Checks every answer against the mock's data for its own row's CEP.
  static func check(
    _ answers: [LookupAnswer<Customer>], _ rows: [Customer], _ server: MockServer,
    failuresAllowed: Bool = false
  ) {
    #expect(answers.map(\.row) == rows)
    for answer in answers {
      let cep = answer.row.cep
      switch answer.result {
      case .success(let address):
        let truth = (try? normalizeCEP(cep)).flatMap { expectedAddress(server, $0, withGeo: false) }
        #expect(truth != nil || server.dataset.address(for: cep) == nil, "row \(answer.row.id)")
        #expect(address == truth, "row \(answer.row.id), CEP \(cep)")
      case .failure(.invalidCEP):
        #expect((try? normalizeCEP(cep)) == nil, "row \(answer.row.id): \(cep) is valid")
      case .failure(let error):
        #expect(failuresAllowed, "row \(answer.row.id): \(error)")
      }
    }
  }

  static func collect<S: AsyncSequence>(_ stream: S) async throws -> [S.Element] {
    var answers: [S.Element] = []
    for try await answer in stream { answers.append(answer) }
    return answers
  }

  /// How many CEPs each `/csv` request carried, in the order the server saw them.
  static func chunkSizes(_ server: MockServer) -> [Int] {
    requests(server, on: .csv).map { $0.query?.split(separator: ",").count ?? 0 }
  }

  /// Default options, but an inline input is read with `next()`.
  static var readingWithPlainNext: BulkOptions {
    var options = BulkOptions()
    options.readsWithPlainNext = true
    return options
  }

  static func distinctValid(_ rows: [Customer]) -> Set<String> {
    Set(rows.compactMap { try? normalizeCEP($0.cep) })
  }

  /// How a plain sequence of rows is given: an array (read by index) or another sequence
  /// (read through its iterator), each as it is or wrapped as an `AsyncSequence` by hand; and
  /// a slice read with `next()`, as on the systems before `next(isolation:)`.
  enum PlainRows: String, CaseIterable, Sendable, CustomStringConvertible {
    case array
    case slice
    case wrappedArray
    case wrappedSlice
    case sliceReadWithPlainNext
    var description: String { rawValue }
  }

  @Test(arguments: testedTransportKinds, PlainRows.allCases)
  func everyRowInOrderEachDistinctCEPOnceMalformedNeverSent(
    transport: Transport.Kind, plain: PlainRows
  ) async throws {
    try await withMockServer { server in
      let rows = Self.customers()
      let client = fastClient(server, transport)
      let answers =
        switch plain {
        case .array: try await Self.collect(client.lookups(rows, cep: { $0.cep }))
        case .slice: try await Self.collect(client.lookups(rows[...], cep: { $0.cep }))
        case .wrappedArray:
          try await Self.collect(client.lookups(AsyncRows(rows), cep: { $0.cep }))
        case .wrappedSlice:
          try await Self.collect(client.lookups(AsyncRows(rows[...]), cep: { $0.cep }))
        case .sliceReadWithPlainNext:
          try await Self.collect(
            client.lookups(rows[...], cep: { $0.cep }, options: Self.readingWithPlainNext))
        }
      Self.check(answers, rows, server)
      let sent = requests(server, on: .csv)
      let asked = sent.flatMap { ($0.query ?? "").dropFirst("ceps=".count).split(separator: ",") }
      let distinct = Self.distinctValid(rows)
      #expect(asked.count == distinct.count)
      #expect(Set(asked.map(String.init)) == distinct)
      #expect(sent.count == (distinct.count + Client.maxBatch - 1) / Client.maxBatch)
    }
  }

  @Test(
    arguments: testedTransportKinds,
    [
      [MockFault.csvReordered, .csvDuplicatedRows, .csvExtraRows],
      [.csvOmitMissing, .csvMaskedCEPs, .csvColumnsShuffled, .csvBOM, .csvCRLF],
    ])
  func rowsAreMatchedByTheirOwnCEP(transport: Transport.Kind, modes: [MockFault]) async throws {
    try await withMockServer { server in
      server.setMode(.csv, modes)
      let rows = Self.customers()
      let answers = try await Self.collect(
        fastClient(server, transport).lookups(AsyncRows(rows), cep: { $0.cep }))
      Self.check(answers, rows, server)
    }
  }

  @Test(arguments: testedTransportKinds)
  func thePlainFormTakesCEPStrings(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let inputs = ["01001-000", "oops", "01001000", "99999999"]
      let answers = try await Self.collect(fastClient(server, transport).lookups(inputs))
      #expect(answers.map(\.row) == inputs)
      #expect(try answers[0].result.get() == expectedAddress(server, "01001000", withGeo: false))
      #expect(answers[0].address == answers[2].address)
      guard case .failure(.invalidCEP) = answers[1].result else {
        Issue.record("a malformed CEP is invalidCEP, got \(answers[1].result)")
        return
      }
      #expect(try answers[3].result.get() == nil)
      #expect(requests(server, on: .csv).count == 1)
    }
  }

  /// The rows of a plain sequence (read inline), or of an asynchronous one whose producer
  /// yields its turn every few rows, so that the stream's reader task often finds no row
  /// waiting: a pause far shorter than the linger, which must not send a partial chunk.
  @Test(arguments: testedTransportKinds, [false, true])
  func onlyFullChunksWhileRowsKeepComingAPartialOneAtTheEnd(
    transport: Transport.Kind, asynchronous: Bool
  ) async throws {
    try await withMockServer { server in
      // 1,250 distinct CEPs, each twice, the second time 1,250 rows later.
      let ceps = (0..<1_250).map { String(10_000_000 + $0 * 3) }
      let rows = (ceps + ceps).enumerated().map { Customer(id: $0, cep: $1) }
      let client = fastClient(server, transport)
      let answers: [LookupAnswer<Customer>]
      if asynchronous {
        let (input, continuation) = AsyncStream.makeStream(of: Customer.self)
        let producer = Task {
          for (index, row) in rows.enumerated() {
            continuation.yield(row)
            if index % 7 == 0 { await Task.yield() }
            if index % 500 == 0 { try? await Task.sleep(nanoseconds: 2_000_000) }
          }
          continuation.finish()
        }
        answers = try await Self.collect(
          client.lookups(input, cep: { $0.cep }, options: BulkOptions(linger: 60)))
        await producer.value
      } else {
        answers = try await Self.collect(client.lookups(AsyncRows(rows), cep: { $0.cep }))
      }
      Self.check(answers, rows, server)
      let sizes = Self.chunkSizes(server)
      #expect(sizes.sorted() == [250, 500, 500])
    }
  }

  @Test(arguments: testedTransportKinds)
  func aFullReadAheadSendsAPartialChunk(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let rows = (0..<600).map { Customer(id: $0, cep: String(10_000_000 + $0 * 3)) }
      let options = BulkOptions(readAhead: 100)
      let answers = try await Self.collect(
        fastClient(server, transport).lookups(AsyncRows(rows), cep: { $0.cep }, options: options))
      Self.check(answers, rows, server)
      let sizes = Self.chunkSizes(server)
      #expect(sizes.allSatisfy { $0 <= 100 })
      #expect(sizes.reduce(0, +) == 600)
    }
  }

  @Test(arguments: testedTransportKinds)
  func aFailedChunkFailsItsOwnRowsOnlyAndItsCEPsAreAskedAgainLater(transport: Transport.Kind)
    async throws
  {
    try await withMockServer { server in
      // Chunk 1 answers, chunk 2 fails (one attempt), chunk 3 answers; then the CEPs of
      // chunk 2 come back and are asked again.
      server.script(.csv, [.normal, .status(503)])
      let ceps = (0..<1_500).map { String(10_000_000 + $0 * 3) }
      let again = Array(ceps[500..<1_000])
      let rows = (ceps + again).enumerated().map { Customer(id: $0, cep: $1) }
      let client = fastClient(server, transport, maxAttempts: 1)
      // One chunk at a time, so that the script's order is the chunks' order; a read-ahead of
      // one chunk, so that the repeats are read after chunk 2 failed (rows read while it was
      // in flight would have waited for it, and shared its failure).
      let options = BulkOptions(readAhead: 500, chunksInFlight: 1)
      let answers = try await Self.collect(
        client.lookups(AsyncRows(rows), cep: { $0.cep }, options: options))
      #expect(answers.count == rows.count)
      for (index, answer) in answers.enumerated() {
        if (500..<1_000).contains(index) {
          guard case .failure(.serverError(_, 503)) = answer.result else {
            Issue.record("row \(index): \(answer.result)")
            continue
          }
        } else {
          #expect(
            try answer.result.get() == expectedAddress(server, answer.row.cep, withGeo: false),
            "row \(index)")
        }
      }
      let asked = requests(server, on: .csv).flatMap {
        ($0.query ?? "").dropFirst("ceps=".count).split(separator: ",").map(String.init)
      }
      #expect(asked.count == 2_000)
      #expect(Set(asked.suffix(500)) == Set(again))
    }
  }

  @Test(arguments: testedTransportKinds)
  func aMemoSmallerThanTheFileAsksAgainAndStaysRight(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let rows = Self.customers()
      let options = BulkOptions(memoCapacity: 7, readAhead: 300)
      let answers = try await Self.collect(
        fastClient(server, transport).lookups(AsyncRows(rows), cep: { $0.cep }, options: options))
      Self.check(answers, rows, server)
      let asked = Self.chunkSizes(server).reduce(0, +)
      #expect(asked > Self.distinctValid(rows).count)
    }
  }

  @Test(arguments: testedTransportKinds)
  func anInputThatThrowsEndsTheStreamAfterTheRowsReadBeforeIt(transport: Transport.Kind)
    async throws
  {
    try await withMockServer { server in
      let rows = Self.customers()
      let input = CountingRows(rows: rows, read: RowCounter(), throwAfter: 1_234)
      var answers: [LookupAnswer<Customer>] = []
      await #expect(throws: CountingRows.InputBroke.self) {
        for try await answer in fastClient(server, transport).lookups(input, cep: { $0.cep }) {
          answers.append(answer)
        }
      }
      Self.check(answers, Array(rows.prefix(1_234)), server)
    }
  }

  @Test(arguments: testedTransportKinds)
  func aSlowConsumerStopsTheReading(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let rows = (0..<20_000).map { Customer(id: $0, cep: String(10_000_000 + $0 % 2_000 * 3)) }
      let input = CountingRows(rows: rows, read: RowCounter())
      let options = BulkOptions(readAhead: 1_000)
      var iterator = fastClient(server, transport).lookups(input, cep: { $0.cep }, options: options)
        .makeAsyncIterator()
      for taken in 1...50 {
        let answer = try await iterator.next()
        #expect(answer?.row == rows[taken - 1])
        // Never more rows read than the read-ahead beyond what was taken.
        #expect(input.read.current <= taken + options.readAhead)
      }
    }
  }

  @Test(arguments: testedTransportKinds)
  func leavingTheLoopEarlyCancelsTheRequestsInFlightAndReadsNoMore(transport: Transport.Kind)
    async throws
  {
    // The client outlives the server: on Linux, tearing down a URLSession while one of its
    // requests is still open on the server stalled the other sessions of the process (seen
    // while building the transport conformance suite), so the server ends that request first.
    var client: Client?
    try await withMockServer { server in
      // The second chunk's answer takes 30 s: leaving the loop must not wait for it. The
      // input holds row 500 back until the first chunk has reached the server, so that the
      // chunks reach it in order; the first answer takes a second, so that the second chunk
      // is sent (all rows read) before the first rows are answered.
      server.script(.csv, [.delayHeaders(1), .delayHeaders(30)])
      let rows = (0..<1_000).map { Customer(id: $0, cep: String(10_000_000 + $0 * 3)) }
      var input = CountingRows(rows: rows, read: RowCounter())
      input.pause = (500, { try await waitForRequests(server, on: .csv, count: 1) })
      let options = BulkOptions(chunksInFlight: 2)
      let lookups = fastClient(server, transport, timeout: 60)
      client = lookups
      let (_, elapsed) = try await measure {
        for try await answer in lookups.lookups(input, cep: { $0.cep }, options: options) {
          guard answer.row.id == 10 else { continue }
          // Leave while the second chunk is at the server, waiting for its answer.
          try await waitForRequests(server, on: .csv, count: 2)
          break
        }
      }
      #expect(elapsed < 10)
      try await waitForClientClose(server, on: .csv)
      #expect(requests(server, on: .csv).count == 2)
      let readWhenLeft = input.read.current
      try await Task.sleep(nanoseconds: 200_000_000)
      #expect(input.read.current == readWhenLeft)
      #expect(requests(server, on: .csv).count == 2)
    }
    withExtendedLifetime(client) {}
  }

  @Test(arguments: testedTransportKinds)
  func cancellingTheTaskEndsTheStreamPromptly(transport: Transport.Kind) async throws {
    var client: Client?  // outlives the server, as above
    try await withMockServer { server in
      server.setMode(.csv, [.delayHeaders(30)])
      let rows = (0..<600).map { Customer(id: $0, cep: String(10_000_000 + $0 * 3)) }
      let lookups = fastClient(server, transport, timeout: 60)
      client = lookups
      let task = Task {
        try await Self.collect(lookups.lookups(AsyncRows(rows), cep: { $0.cep }))
      }
      try await waitForRequests(server, on: .csv, count: 1)
      let (outcome, elapsed) = await measure {
        task.cancel()
        return await task.result
      }
      #expect(elapsed < 15)  // the answer would take 30 s
      #expect(throws: CancellationError.self) { try outcome.get() }
      try await waitForClientClose(server, on: .csv)
    }
    withExtendedLifetime(client) {}
  }

  /// The requests in flight together, seen by the server: the configured number, 4 by default
  /// (and `lookupMany`'s 4), never more.
  @Test(arguments: testedTransportKinds, [1, 3, nil] as [Int?])
  func chunksInFlightAtOnce(transport: Transport.Kind, inFlight: Int?) async throws {
    try await withMockServer { server in
      // Every /csv answer waits 100 ms: requests sent together overlap at the server.
      server.setMode(.csv, [.delayHeaders(0.1)])
      // 12 full chunks of distinct CEPs that exist.
      let rows = (0..<6_000).map {
        Customer(id: $0, cep: String(10_000_000 + $0 / 9 * 10 + $0 % 9))
      }
      let client = fastClient(server, transport)
      let options = inFlight.map { BulkOptions(chunksInFlight: $0) } ?? BulkOptions()
      let answers = try await Self.collect(client.lookups(rows, cep: { $0.cep }, options: options))
      Self.check(answers, rows, server)
      #expect(answers.allSatisfy { (try? $0.result.get()) != nil })
      #expect(requests(server, on: .csv).count == 12)
      #expect(server.peakConcurrentRequests(on: .csv) == (inFlight ?? 4))
      guard inFlight == nil else { return }
      server.reset()
      server.setMode(.csv, [.delayHeaders(0.1)])
      let found = try await client.lookupMany(rows.map(\.cep))
      #expect(found.count == rows.count && found.allSatisfy { $0 != nil })
      #expect(server.peakConcurrentRequests(on: .csv) == Client.batchConcurrency)
      #expect(Client.batchConcurrency == 4)
    }
  }

  /// The default memo holds 100,000 answers: a CEP seen again after 99,999 other distinct CEPs
  /// is not asked again.
  @Test(arguments: testedTransportKinds)
  func theDefaultMemoHoldsOneHundredThousandCEPs(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let first = "20040020"
      var rows = [Customer(id: 0, cep: first)]
      for index in 0..<99_999 {
        rows.append(Customer(id: index + 1, cep: String(10_000_000 + index / 9 * 10 + index % 9)))
      }
      rows.append(Customer(id: 100_000, cep: first))
      let answers = try await Self.collect(
        fastClient(server, transport).lookups(rows, cep: { $0.cep }))
      #expect(answers.count == rows.count)
      #expect(try answers.last?.result.get() == expectedAddress(server, first, withGeo: false))
      #expect(answers.allSatisfy { (try? $0.result.get()) != nil })
      let sent = requests(server, on: .csv)
      #expect(sent.count == 200)
      #expect(sent.filter { $0.query?.contains(first) == true }.count == 1)
    }
  }

}
