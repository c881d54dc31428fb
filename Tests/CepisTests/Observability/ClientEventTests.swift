import CepisHTTP
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// The events a client reports, against CepisMock's scripted faults over each transport:
/// the path the command line's `--verbose` and the `Observability` trait's adapters read.
@Suite("Client events")
struct ClientEventTests {
  static let known = "01001000"

  /// A single lookup's attempt `attempt`, answered with `status`.
  static func exchange(_ attempt: Int, status: Int) -> [ClientEvent] {
    [
      .attemptStarted(endpoint: "single", attempt: attempt),
      .attemptEnded(
        endpoint: "single", attempt: attempt, status: status, errorType: nil, seconds: 0),
    ]
  }

  @Test(
    "a 503 then a 200: two attempts, one retry, the answer's source",
    arguments: testedTransportKinds)
  func serverErrorThenSuccess(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      let client = fastClient(server, transport).observed(by: recorder)
      server.script(.cep, [.status(503)])
      _ = try await client.lookup(Self.known)
      #expect(recorder.entries.first == .started(.lookup))
      #expect(recorder.entries.last == .ended(.lookup, error: nil))
      #expect(
        recorder.events == Self.exchange(1, status: 503) + [
          .retryScheduled(endpoint: "single", attempt: 1, wait: 0, reason: "503")
        ] + Self.exchange(2, status: 200) + [.answered(source: "cepis")])
      #expect(Set(recorder.requestIDs).count == 1)
    }
  }

  @Test(
    "a 429 with Retry-After: the wait the server asked for, capped", arguments: testedTransportKinds
  )
  func rateLimitedWithRetryAfter(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      let client = fastClient(server, transport).observed(by: recorder)
      server.script(.cep, [.status(429, retryAfter: "1")])
      _ = try await client.lookup(Self.known)
      #expect(
        recorder.events == Self.exchange(1, status: 429) + [
          .rateLimited(endpoint: "single", retryAfter: 1),
          .retryScheduled(endpoint: "single", attempt: 1, wait: 0, reason: "429"),
        ] + Self.exchange(2, status: 200) + [.answered(source: "cepis")])
    }
  }

  @Test("cep.is down, ViaCEP answers", arguments: testedTransportKinds)
  func fallbackAnswers(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      let client = makeClient(
        transport, baseURL: server.baseURL, maxAttempts: 1,
        fallbacks: [.viaCEP(baseURL: server.baseURL)]
      ).observed(by: recorder)
      server.setMode(.cep, [.status(503)])
      let address = try await client.lookup(Self.known)
      #expect(address.source == .viaCEP)
      #expect(
        recorder.events == Self.exchange(1, status: 503) + [
          .fallbackStarted(provider: "viacep", hedged: false),
          .fallbackEnded(provider: "viacep", outcome: "found"), .answered(source: "viacep"),
        ])
    }
  }

  @Test("a hedge won by the fallback", arguments: testedTransportKinds)
  func hedgeWonByFallback(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      let client = makeClient(
        transport, baseURL: server.baseURL, timeout: 120, maxAttempts: 1,
        fallbacks: [.viaCEP(baseURL: server.baseURL)], hedgeAfter: 0.05
      ).observed(by: recorder)
      // cep.is holds its answer far longer than any scheduling delay: the hedge must win.
      server.script(.cep, [.delayHeaders(60)])
      let address = try await client.lookup(Self.known)
      #expect(address.source == .viaCEP)
      let events = recorder.events
      #expect(events.first == .attemptStarted(endpoint: "single", attempt: 1))
      #expect(
        events.contains(.fallbackStarted(provider: "viacep", hedged: true))
          && events.contains(.fallbackEnded(provider: "viacep", outcome: "found")))
      #expect(events.last == .answered(source: "viacep"))
      #expect(recorder.entries.last == .ended(.lookup, error: nil))
    }
  }

  @Test("a retry budget run dry refuses the retry", arguments: testedTransportKinds)
  func retryBudgetDry(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      let budget = RetryBudget(capacity: 5, retryCost: 5, timeoutRetryCost: 5, successRefund: 1)
      let client = fastClient(server, transport, retryBudget: budget).observed(by: recorder)
      server.setMode(.cep, [.status(503)])
      await #expect(throws: CepisError.self) { try await client.lookup(Self.known) }
      #expect(
        recorder.events == Self.exchange(1, status: 503) + [
          .retryScheduled(endpoint: "single", attempt: 1, wait: 0, reason: "503")
        ] + Self.exchange(2, status: 503) + [.retryBudgetRefused(endpoint: "single")])
      #expect(recorder.entries.last == .ended(.lookup, error: "server_error"))
    }
  }

  @Test(
    "a wait for the client's own rate is an event, before the attempt it delays",
    arguments: testedTransportKinds)
  func rateLimitWait(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      // One request a minute: the second call's turn is most of a minute away, which the
      // injected sleeper skips.
      let environment = HTTPEnvironment(
        sleep: { _ in try Task.checkCancellation() }, random: { 0 }, now: { Date() })
      let client = makeClient(
        transport, baseURL: server.baseURL, maxAttempts: 1, retryBudget: nil,
        rateLimit: .perMinute(1, burst: 1), environment: environment
      ).observed(by: recorder)
      _ = try await client.lookup(Self.known)
      #expect(!recorder.events.contains { if case .paced = $0 { true } else { false } })
      _ = try await client.lookup(Self.known)
      let second = recorder.events.drop { $0 != .answered(source: "cepis") }.dropFirst()
      guard case .paced(let seconds)? = second.first else {
        Issue.record("the second call does not start with a wait: \(Array(second))")
        return
      }
      #expect(seconds > 30 && seconds <= 60)
      #expect(
        Array(second.dropFirst().prefix(1)) == [.attemptStarted(endpoint: "single", attempt: 1)])
    }
  }

  @Test(
    "a 429 in a bulk run: the refusal and the run's pause are events, and no attempt is spent",
    arguments: testedTransportKinds)
  func bulkPause(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      server.script(.csv, [.status(429, retryAfter: "1")])
      let client = fastClient(server, transport, maxAttempts: 1, retryBudget: nil)
        .observed(by: recorder)
      let ceps = (0..<600).map { String(10_000_000 + $0 * 41) }
      var answers = 0
      for try await answer in client.lookups(ceps) {
        if case .success = answer.result { answers += 1 }
      }
      #expect(answers > 500)
      let events = recorder.events
      let limited = events.firstIndex { if case .rateLimited = $0 { true } else { false } }
      let index = try #require(limited, "\(events)")
      guard case .rateLimited(let endpoint, let retryAfter) = events[index] else { return }
      #expect(retryAfter == 1)
      #expect(events[index + 1] == .bulkPaused(seconds: 1))
      #expect(!events.contains { if case .retryScheduled = $0 { true } else { false } })
      // The refused chunk is asked again as its attempt 1.
      let starts = events.filter { $0 == .attemptStarted(endpoint: endpoint, attempt: 1) }
      #expect(starts.count == 3)
    }
  }

  @Test("a cancelled call ends as cancelled", arguments: testedTransportKinds)
  func cancelledCall(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      let client = fastClient(server, transport).observed(by: recorder)
      server.setMode(.cep, [.delayHeaders(10)])
      let call = Task { try await client.lookup(Self.known) }
      while !recorder.events.contains(.attemptStarted(endpoint: "single", attempt: 1)) {
        try await Task.sleep(nanoseconds: 5_000_000)
      }
      call.cancel()
      _ = await call.result
      #expect(recorder.entries.last == .ended(.lookup, error: "cancelled"))
    }
  }

  @Test("a stale cache answer when every source fails", arguments: testedTransportKinds)
  func staleAnswer(transport: Transport.Kind) async throws {
    try await withTemporaryFolder { folder in
      try await withMockServer { server in
        let clock = ManualClock()
        let cache = makeCache(.memory, folder: folder, clock: clock)
        let recorder = EventRecorder()
        let client = cachedClient(server, transport, cache: cache).observed(by: recorder)
        _ = try await client.lookup(Self.known)
        let again = try await client.lookup(Self.known)
        #expect(again.cep == Self.known)
        server.setEdition("2026-12")
        clock.advance(3_601)
        server.setMode(.cep, [.status(503)])
        let stale = try await client.lookup(Self.known)
        #expect(stale.staleEdition != nil)
        let events = recorder.events
        #expect(events.contains(.cache(.hit, count: 1)))
        #expect(events.contains(.answered(source: "cache")))
        #expect(events.contains(.editionChanged(from: "2026-11", to: "2026-12")))
        #expect(events.suffix(2) == [.cache(.stale, count: 1), .answered(source: "cepis")])
      }
    }
  }

  @Test(
    "lookupMany: one call, a chunk per 500 CEPs within it, one request id",
    arguments: testedTransportKinds)
  func lookupManyChunks(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = EventRecorder()
      let client = fastClient(server, transport).observed(by: recorder)
      let ceps = (0..<700).map { String(1_001_000 + $0 * 7).leftPadded(to: 8) }
      _ = try await client.lookupMany(ceps)
      let entries = recorder.entries
      #expect(entries.first == .started(.lookupMany))
      #expect(entries.last == .ended(.lookupMany, error: nil))
      #expect(entries.filter { $0 == .started(.lookupsChunk) }.count == 2)
      #expect(recorder.events.filter { if case .chunkSent = $0 { true } else { false } }.count == 2)
      #expect(Set(recorder.requestIDs).count == 1)
    }
  }

  @Test("nobody listening: no scope is made")
  func nobodyListening() async throws {
    let client = Client().observed(by: nil)
    #expect(client.observer == nil)
    let value = try await CallScope.observe(
      .lookup, server: "cep.is", observer: nil, { CallScope.current == nil })
    #expect(value)
  }
}

extension String {
  fileprivate func leftPadded(to width: Int) -> String {
    String(repeating: "0", count: max(0, width - count)) + self
  }
}
