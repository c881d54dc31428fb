import CepisMock
import CepisSupport
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// An asynchronous input that pauses (rows from a queue, a socket, a form) never holds the
/// answers of the rows already read: they come within ``BulkOptions/linger`` of the pause.
/// (That rows which keep coming still fill whole chunks is checked with the plain sequence's
/// case, in `BulkStreamEndToEndTests`.)
@Suite("lookups over an input that pauses, against CepisMock", .serialized)
struct LookupsPausedInputTests {
  /// `body`'s result, or an issue recorded (and `nil`) when it takes longer than `seconds`:
  /// the body is cancelled, so a stream that would wait for ever fails the test instead.
  static func within<T: Sendable>(
    _ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T
  ) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
      group.addTask { try await body() }
      group.addTask {
        try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
        return nil
      }
      defer { group.cancelAll() }
      let first = try await group.next() ?? nil
      if first == nil { Issue.record("\(what): nothing within \(seconds) s") }
      return first
    }
  }

  /// The answers of the first `count` rows, from an iterator of `stream`'s the caller keeps.
  final class Reader: @unchecked Sendable {
    var iterator: LookupStream<AsyncStream<Customer>>.Iterator
    init(_ stream: LookupStream<AsyncStream<Customer>>) { iterator = stream.makeAsyncIterator() }
    func next(_ count: Int) async throws -> [LookupAnswer<Customer>] {
      var answers: [LookupAnswer<Customer>] = []
      while answers.count < count, let answer = try await iterator.next() {
        answers.append(answer)
      }
      return answers
    }
  }

  @Test(arguments: testedTransportKinds)
  func theRowsReadBeforeAPauseAreAnsweredDuringIt(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let (input, rows) = AsyncStream.makeStream(of: Customer.self)
      let first = [
        Customer(id: 0, cep: "10000000"), Customer(id: 1, cep: "oops"),
        Customer(id: 2, cep: "10000-003"), Customer(id: 3, cep: "10000009"),
        Customer(id: 4, cep: "10000000"),
      ]
      for row in first { rows.yield(row) }
      let reader = Reader(fastClient(server, transport).lookups(input, cep: { $0.cep }))
      // The input stays open: the answers must come all the same.
      let answered = try await Self.within(10, "answers during the pause") {
        try await reader.next(first.count)
      }
      BulkStreamEndToEndTests.check(answered ?? [], first, server)
      // One request, a partial chunk of the three distinct valid CEPs.
      let sizes = BulkStreamEndToEndTests.chunkSizes(server)
      #expect(sizes == [3])

      // Then the rows come again, and end.
      let rest = (5..<1_205).map { Customer(id: $0, cep: String(10_000_000 + $0 * 3)) }
      for row in rest { rows.yield(row) }
      rows.finish()
      let after = try await Self.within(30, "the rows after the pause") {
        try await reader.next(rest.count + 1)
      }
      BulkStreamEndToEndTests.check(after ?? [], rest, server)
    }
  }

  @Test(arguments: testedTransportKinds)
  func aPartialChunkWaitsForTheLinger(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let (input, rows) = AsyncStream.makeStream(of: Customer.self)
      let first = (0..<3).map { Customer(id: $0, cep: String(10_000_000 + $0 * 3)) }
      for row in first { rows.yield(row) }
      let linger = 0.4
      let reader = Reader(
        fastClient(server, transport).lookups(
          input, cep: { $0.cep }, options: BulkOptions(linger: linger)))
      let (answered, elapsed) = try await measure {
        try await Self.within(10, "answers after the linger") { try await reader.next(3) }
      }
      BulkStreamEndToEndTests.check(answered ?? [], first, server)
      // The rows were read at once; their chunk waited for the linger, not less.
      #expect(elapsed >= linger * 0.9, "answered after \(elapsed) s")
      rows.finish()
      let rest = try await reader.next(1)
      #expect(rest.isEmpty)
      #expect(requests(server, on: .csv).count == 1)
    }
  }

  @Test(arguments: testedTransportKinds)
  func leavingDuringAPauseStopsTheReader(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let ended = LockedValue(false)
      let (input, rows) = AsyncStream.makeStream(of: Customer.self)
      rows.onTermination = { _ in ended.withLock { $0 = true } }
      rows.yield(Customer(id: 0, cep: "10000000"))
      do {
        let reader = Reader(fastClient(server, transport).lookups(input, cep: { $0.cep }))
        let answered = try await Self.within(10, "the answer during the pause") {
          try await reader.next(1)
        }
        #expect(answered?.count == 1)
        // The reader is dropped here, with the input still open and paused.
      }
      var waited = 0
      while !ended.withLock({ $0 }) && waited < 500 {
        try await Task.sleep(nanoseconds: 10_000_000)
        waited += 1
      }
      #expect(ended.withLock { $0 }, "the stream's reader still waits on the input")
    }
  }
}
