import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("Bulk lookups under a rate limit: every row answered, none lost", .serialized)
struct RateLimitedBulkTests {
  /// 2,400 distinct CEPs of the synthetic range (a tenth do not exist): five chunks.
  static let ceps = (0..<2_400).map { String(10_000_000 + $0 * 41) }

  /// Every row compared with the data for its own CEP; the failures counted apart.
  static func wrongRows(
    _ answers: [LookupAnswer<String>], _ server: MockServer
  ) -> (wrong: Int, failed: Int) {
    var wrong = 0
    var failed = 0
    for answer in answers {
      switch answer.result {
      case .success(let address):
        if address != expectedAddress(server, answer.row, withGeo: false) { wrong += 1 }
      case .failure: failed += 1
      }
    }
    return (wrong, failed)
  }

  @Test(
    "a 429 pauses every request of the run until its Retry-After; the refused chunk is asked again, spending no attempt",
    arguments: testedTransportKinds)
  func pauseAndAskAgain(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // The second request is refused; the others pass.
      server.script(.csv, [.normal, .status(429, retryAfter: "1")])
      // One attempt per call: a 429 under the run's gate must not count as one.
      let client = fastClient(server, transport, maxAttempts: 1, retryBudget: nil)
      var iterator = client.lookups(Self.ceps).makeAsyncIterator()
      var answers: [LookupAnswer<String>] = []
      while let answer = try await iterator.next() { answers.append(answer) }

      #expect(answers.map(\.row) == Self.ceps)
      let (wrong, failed) = Self.wrongRows(answers, server)
      #expect(wrong == 0)
      #expect(failed == 0)
      let sent = requests(server, on: .csv)
      #expect(sent.count == 6)  // five chunks and the one refused
      let statistics = iterator.statistics.rateLimit
      #expect(statistics.refusals == 1)
      #expect(statistics.pauses == 1)
      // The refused request is the second to arrive. Its chunk is asked again once the
      // Retry-After is over; before then, only requests already on their way when the client
      // read the 429 (at most the three other slots of the window) may arrive.
      let refused = sent[1]
      let again = sent.dropFirst(2).filter { $0.queryItems["ceps"] == refused.queryItems["ceps"] }
      #expect(again.count == 1)
      if let again = again.first {
        #expect(again.arrival.timeIntervalSince(refused.arrival) >= 0.95)
      }
      let duringPause = sent.dropFirst(2).filter {
        $0.arrival > refused.arrival && $0.arrival.timeIntervalSince(refused.arrival) < 0.95
      }
      #expect(duringPause.count <= 3)
    }
  }

  @Test(
    "an API that answers nothing but 429 fails the rows still waiting with rateLimited once the patience is spent",
    arguments: testedTransportKinds)
  func patienceEnds(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.csv, [.status(429, retryAfter: "0")])
      let client = fastClient(server, transport, retryBudget: nil)
      var options = BulkOptions()
      options.rateLimitPatience = 0.4
      let started = Date()
      var answers: [LookupAnswer<String>] = []
      for try await answer in client.lookups(Self.ceps, options: options) {
        answers.append(answer)
      }
      let elapsed = Date().timeIntervalSince(started)
      #expect(answers.count == Self.ceps.count)
      let rateLimited = answers.filter {
        if case .failure(.rateLimited) = $0.result { return true }
        return false
      }
      #expect(rateLimited.count == Self.ceps.count)
      #expect(elapsed >= 0.4)
      // Paced while it waits: a handful of requests, not a storm.
      #expect(requests(server, on: .csv).count <= 12)
    }
  }

  @Test(
    "a run paces itself to what the API lets through: every row answered, the 429s counted on both sides",
    arguments: testedTransportKinds)
  func pacesItself(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // 20 a second, 2 at once, Retry-After 0: the run learns the pace from the answers alone.
      server.limitRate(.csv, .tokenBucket(perSecond: 20, burst: 2, retryAfter: .seconds(0)))
      let client = fastClient(server, transport, maxAttempts: 1, retryBudget: nil)
      let many = (0..<6_000).map { String(10_000_000 + $0 * 13) }
      var iterator = client.lookups(many).makeAsyncIterator()
      var answers: [LookupAnswer<String>] = []
      while let answer = try await iterator.next() { answers.append(answer) }
      let (wrong, failed) = Self.wrongRows(answers, server)
      #expect(answers.map(\.row) == many)
      #expect(wrong == 0)
      #expect(failed == 0)
      let refused = server.rateLimitedCount(on: .csv)
      #expect(refused >= 1)
      #expect(iterator.statistics.rateLimit.refusals == refused)
      #expect(server.acceptedCount(on: .csv) == 12)
      #expect(iterator.statistics.rateLimit.pace != nil)
    }
  }
}
