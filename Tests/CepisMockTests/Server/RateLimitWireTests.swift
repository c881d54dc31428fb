import CepisSupport
import Foundation
import Testing

@testable import CepisMock

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A clock a test moves by hand (monotonic seconds).
final class ManualClock: Sendable {
  private let seconds = LockedValue(1_000.0)

  var now: Double { seconds.withLock { $0 } }

  func advance(_ delta: Double) {
    seconds.withLock { $0 += delta }
  }
}

/// Starts a server whose rate limits read `clock`, runs `body`, stops it (even on failure).
func withServer<T>(
  clock: ManualClock, _ configuration: MockServer.Configuration = .init(),
  _ body: (MockServer) async throws -> T
) async throws -> T {
  let server = MockServer(configuration: configuration, clock: { clock.now })
  try await server.start()
  do {
    let result = try await body(server)
    await server.stop()
    return result
  } catch {
    await server.stop()
    throw error
  }
}

extension MockTests {
  /// Rate limits over real sockets: what a client reads on the wire.
  @Suite struct RateLimitWireTests {
    @Test func bucketAnswers429WithRetryAfterAndTheAPIErrorBody() async throws {
      let clock = ManualClock()
      try await withServer(clock: clock) { server async throws in
        server.limitRate(.cep, .tokenBucket(perSecond: 2, burst: 2))
        let client = try RawClient(port: server.port)
        #expect(try client.get("/01001000").status == 200)
        #expect(try client.get("/01001000").status == 200)
        let refused = try client.get("/01001000")
        #expect(refused.status == 429)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.headers["content-type"] == "application/json; charset=utf-8")
        #expect(try refused.json()["mensagem"] is String)
        // The connection stays usable, and the refill lets the next one through.
        clock.advance(0.5)
        #expect(try client.get("/01001000").status == 200)
        #expect(try client.get("/01001000").status == 429)
        // Other routes are not limited.
        #expect(try client.get("/csv?ceps=01001000").status == 200)
        #expect(server.rateLimitedCount(on: .cep) == 2)
        #expect(server.acceptedCount(on: .cep) == 3)
        #expect(server.acceptedCount(on: .csv) == 1)
        #expect(server.blockedCount(on: .cep) == 0)
        #expect(server.faultCounts["rateLimited"] == 2)
        // Every request is logged, refused or not.
        #expect(server.requests.filter { $0.route == .cep }.count == 5)
      }
    }

    @Test func retryAfterAsHTTPDateAndFixedSeconds() async throws {
      let clock = ManualClock()
      try await withServer(clock: clock) { server async throws in
        server.limitRate(.csv, .tokenBucket(perSecond: 0.25, burst: 1, retryAfter: .httpDate))
        #expect(try fetch(server, "/csv?ceps=01001000").status == 200)
        let before = Date()
        let refused = try fetch(server, "/csv?ceps=01001000")
        let after = Date()
        #expect(refused.status == 429)
        let header = try #require(refused.headers["retry-after"])
        let instant = try #require(parseIMFFixdate(header), "\(header)")
        // The next token is 4 s away (the clock did not move), rounded up to the second.
        #expect(instant >= before.addingTimeInterval(4).addingTimeInterval(-1))
        #expect(instant <= after.addingTimeInterval(4).addingTimeInterval(1))

        server.limitRate(.csv, .tokenBucket(perSecond: 0.25, burst: 1, retryAfter: .seconds(30)))
        #expect(try fetch(server, "/csv?ceps=01001000").status == 200)
        #expect(try fetch(server, "/csv?ceps=01001000").headers["retry-after"] == "30")
      }
    }

    @Test func blockAnswers403HTMLForItsDurationThenLetsThrough() async throws {
      let clock = ManualClock()
      try await withServer(clock: clock) { server async throws in
        server.limitRate(.viaCEP, .block(after: 2, within: 60, for: 30))
        #expect(try fetch(server, "/ws/01001000/json/").status == 200)
        #expect(try fetch(server, "/ws/01001000/json/").status == 200)
        let blocked = try fetch(server, "/ws/01001000/json/")
        #expect(blocked.status == 403)
        #expect(blocked.headers["content-type"] == "text/html; charset=utf-8")
        #expect(blocked.text.contains("<html"))
        #expect(blocked.headers["retry-after"] == nil)
        clock.advance(29.9)
        #expect(try fetch(server, "/ws/01001000/json/").status == 403)
        clock.advance(0.2)
        let again = try fetch(server, "/ws/01001000/json/")
        #expect(again.status == 200)
        #expect(try again.json()["cep"] as? String == "01001-000")
        #expect(server.blockedCount(on: .viaCEP) == 2)
        #expect(server.acceptedCount(on: .viaCEP) == 3)
        #expect(server.faultCounts["blocked"] == 2)
      }
    }

    @Test func refusedRequestsTakeNoFaultAndAcceptedOnesKeepTheirs() async throws {
      let clock = ManualClock()
      try await withServer(clock: clock) { server async throws in
        server.limitRate(.cep, .tokenBucket(perSecond: 1, burst: 1))
        server.script(.cep, [.status(503)])
        server.setMode(.cep, [.giantHeaders(bytes: 10)])
        let first = try fetch(server, "/01001000")
        #expect(first.status == 503)
        #expect(first.headers["x-mock-padding"] == "aaaaaaaaaa")
        server.script(.cep, [.status(500)])
        let refused = try fetch(server, "/01001000")
        #expect(refused.status == 429)
        #expect(refused.headers["x-mock-padding"] == nil)
        clock.advance(1)
        // The scripted 500 waited for a request the limit let through.
        #expect(try fetch(server, "/01001000").status == 500)
        #expect(server.faultCounts["status(500)"] == 1)
      }
    }

    @Test func cpfRouteRefusalUsesCPFHubsErrorShape() async throws {
      let clock = ManualClock()
      try await withServer(clock: clock) { server async throws in
        server.limitRate(.cpf, .tokenBucket(perSecond: 1, burst: 1))
        _ = try fetch(server, "/cpf/52998224725", headers: ["x-api-key": "test-key"])
        let refused = try fetch(server, "/cpf/52998224725", headers: ["x-api-key": "test-key"])
        #expect(refused.status == 429)
        #expect(try refused.json()["success"] as? Bool == false)
      }
    }

    @Test func removingResettingAndConfiguredLimits() async throws {
      let clock = ManualClock()
      let configuration = MockServer.Configuration(
        rateLimits: [.health: .block(after: 1, within: 60, for: 60)])
      try await withServer(clock: clock, configuration) { server async throws in
        #expect(try fetch(server, "/health").status == 200)
        #expect(try fetch(server, "/health").status == 403)
        server.limitRate(.health, nil)
        #expect(try fetch(server, "/health").status == 200)
        server.limitRate(.cep, .tokenBucket(perSecond: 1, burst: 1))
        // reset() removes what limitRate set and restores the configured limit, fresh.
        server.reset()
        #expect(server.blockedCount(on: .health) == 0)
        #expect(server.acceptedCount(on: .health) == 0)
        #expect(try fetch(server, "/01001000").status == 200)
        #expect(try fetch(server, "/01001000").status == 200)
        #expect(try fetch(server, "/health").status == 200)
        #expect(try fetch(server, "/health").status == 403)
        // A limit with neither part removes the route's limit.
        server.limitRate(.health, MockRateLimit())
        #expect(try fetch(server, "/health").status == 200)
      }
    }

    @Test func controlEndpointSetsAndRemovesLimits() async throws {
      let clock = ManualClock()
      try await withServer(clock: clock) { server async throws in
        let set = try postJSON(
          server, "/__mock/rate-limit",
          #"{"route":"viacep","limit":["block,after=3,within=60,for=10","1/s,burst=1"]}"#)
        #expect(set.status == 200)
        #expect(try set.json()["limited"] as? Bool == true)
        #expect(try fetch(server, "/ws/01001000/json/").status == 200)
        #expect(try fetch(server, "/ws/01001000/json/").status == 429)
        #expect(try fetch(server, "/ws/01001000/json/").status == 429)
        #expect(try fetch(server, "/ws/01001000/json/").status == 403)
        let removed = try postJSON(server, "/__mock/rate-limit", #"{"route":"viacep"}"#)
        #expect(removed.status == 200)
        #expect(try removed.json()["limited"] as? Bool == false)
        #expect(try fetch(server, "/ws/01001000/json/").status == 200)

        let string = try postJSON(
          server, "/__mock/rate-limit", #"{"route":"csv","limit":"2/s,retry-after=date"}"#)
        #expect(string.status == 200)
        for bad in [
          #"{"route":"nope","limit":"5/s"}"#, #"{"route":"csv","limit":"fast"}"#,
          #"{"route":"csv","limit":5}"#, "not json",
        ] {
          let response = try postJSON(server, "/__mock/rate-limit", bad)
          #expect(response.status == 400, "\(bad)")
          #expect(try response.json()["mensagem"] is String, "\(bad)")
        }
        #expect(try fetch(server, "/__mock/rate-limit").status == 405)
      }
    }

    // MARK: The server's own clock

    @Test func urlSessionSees429AndRetryAfterOnTheRealClock() async throws {
      try await withServer { server async throws in
        // One token every 20 s: the third request is refused however slow the machine is.
        server.limitRate(.cep, .tokenBucket(perSecond: 0.05, burst: 2))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let url = server.baseURL.appendingPathComponent("01001000")
        var statuses: [Int] = []
        var last: HTTPURLResponse?
        for _ in 0..<3 {
          let (_, response) = try await download(session, url)
          last = response as? HTTPURLResponse
          statuses.append(last?.statusCode ?? 0)
        }
        #expect(statuses == [200, 200, 429])
        let retryAfter = try #require(last?.value(forHTTPHeaderField: "Retry-After"))
        let seconds = try #require(Int(retryAfter))
        #expect((1...20).contains(seconds))
      }
    }

    @Test func urlSessionSees403HTMLThenTheBlockEndsOnTheRealClock() async throws {
      try await withServer { server async throws in
        server.limitRate(.viaCEP, .block(after: 2, within: 60, for: 0.2))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let url = server.baseURL.appendingPathComponent("ws/01001000/json/")
        for _ in 0..<2 {
          let (_, response) = try await download(session, url)
          #expect((response as? HTTPURLResponse)?.statusCode == 200)
        }
        let (body, response) = try await download(session, url)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 403)
        #expect(http.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/html") == true)
        #expect(String(decoding: body, as: UTF8.self).contains("bloqueado"))
        try await Task.sleep(nanoseconds: 300_000_000)
        let (_, after) = try await download(session, url)
        #expect((after as? HTTPURLResponse)?.statusCode == 200)
        #expect(server.blockedCount(on: .viaCEP) == 1)
      }
    }
  }
}
