import CepisHTTP
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("A client's own rate limit")
struct ClientRateLimitTests {
  /// A client of `server` over `transport` that keeps to `limit`.
  func limitedClient(
    _ server: MockServer, _ transport: Transport, _ limit: RateLimit,
    totalTimeout: TimeInterval? = nil
  ) -> Client {
    Client(
      baseURL: server.baseURL, timeout: 5, maxAttempts: 1, totalTimeout: totalTimeout,
      transport: transport, rateLimit: limit)
  }

  @Test(
    "requests are spaced at the rate, shared by every client with the limit on one transport",
    arguments: testedTransportKinds)
  func sharedAcrossClients(kind: Transport.Kind) async throws {
    try await withMockServer { server in
      let transport = makeTransport(kind)
      let limit = RateLimit.perSecond(20, burst: 1)
      let first = limitedClient(server, transport, limit)
      let second = limitedClient(server, transport, limit)
      let ceps = Array(server.dataset.sampleCEPs.prefix(10))
      try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, cep) in ceps.enumerated() {
          let client = index.isMultiple(of: 2) ? first : second
          group.addTask { _ = try await client.lookup(cep) }
        }
        try await group.waitForAll()
      }
      let arrivals = requests(server, on: .cep).map(\.arrival).sorted()
      #expect(arrivals.count == 10)
      // Ten requests at 20 a second, one at once: nine intervals of 50 ms at least.
      let spread = (arrivals.last ?? .distantPast).timeIntervalSince(arrivals[0])
      #expect(spread >= 0.4)
    }
  }

  @Test(
    "a turn that would come after the deadline fails at once with rateLimited, costing no request",
    arguments: testedTransportKinds)
  func noTurnBeforeDeadline(kind: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = limitedClient(
        server, makeTransport(kind), .perMinute(1), totalTimeout: 5)
      let ceps = Array(server.dataset.sampleCEPs.prefix(2))
      _ = try await client.lookup(ceps[0])
      let started = Date()
      await #expect {
        _ = try await client.lookup(ceps[1])
      } throws: { error in
        guard case .rateLimited(let message, let retryAfter)? = error as? CepisError else {
          return false
        }
        return message.contains("rate limit") && (retryAfter ?? 0) > 50
      }
      // The next turn is a minute away: nothing was waited for.
      #expect(Date().timeIntervalSince(started) < 2)
      #expect(requests(server, on: .cep).count == 1)
    }
  }

  @Test("the default transport is one value, so clients on it share their limits")
  func defaultTransportIsOneValue() {
    let limit = RateLimit.perSecond(3)
    #expect(
      Transport.default.pacers.pacer(for: limit) === Transport.default.pacers.pacer(for: limit))
    #expect(
      makeTransport(.urlSession).pacers.pacer(for: limit)
        !== Transport.default.pacers.pacer(for: limit))
  }

  @Test(
    "a limit reads as what it allows",
    arguments: [
      (RateLimit.perSecond(5), 5.0, 5, "5/s (burst 5)"),
      (.perSecond(2.5, burst: 1), 2.5, 1, "2.5/s (burst 1)"),
      (.perMinute(30), 0.5, 1, "30/min (burst 1)"),
      (.perSecond(0), 1.0 / 3_600, 1, "0.0167/min (burst 1)"),
      (.perSecond(.nan, burst: -4), 1.0 / 3_600, 1, "0.0167/min (burst 1)"),
    ])
  func limitValues(limit: RateLimit, perSecond: Double, burst: Int, text: String) {
    #expect(abs(limit.requestsPerSecond - perSecond) < 1e-12)
    #expect(limit.burst == burst)
    #expect(limit.description == text)
  }
}
