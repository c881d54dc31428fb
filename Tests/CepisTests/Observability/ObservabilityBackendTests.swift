#if Observability
  #if AsyncHTTPClient
    import AsyncHTTPClient
  #endif
  import CepisHTTP
  import CepisMock
  import CepisTestSupport
  import Foundation
  import InMemoryTracing
  import InMemoryLogging
  import Logging
  import MetricsTestKit
  import Testing
  import Tracing

  @testable import Cepis

  /// The `Observability` trait's adapters against CepisMock's scripted faults, over each
  /// transport: the exact log lines, counters and span of each scenario.
  @Suite("Observability: logs, metrics and spans")
  struct ObservabilityBackendTests {
    static let known = "01001000"

    /// The one span of a single call, with its attributes.
    func onlySpan(_ backends: ObservabilityBackends) throws -> FinishedInMemorySpan {
      let spans = backends.tracer.finishedSpans
      try #require(spans.count == 1, "\(spans.map(\.operationName))")
      return spans[0]
    }

    @Test("a 503 then a 200", arguments: testedTransportKinds)
    func serverErrorThenSuccess(transport: Transport.Kind) async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let client = fastClient(server, transport).observed(by: backends.observer)
        server.script(.cep, [.status(503)])
        _ = try await client.lookup(Self.known)
        #expect(
          backends.messages == [
            "call started", "attempt started", "attempt ended", "retry scheduled",
            "attempt started", "attempt ended", "answered", "call ended",
          ])
        let levels = backends.logs.entries.map(\.level)
        #expect(levels.allSatisfy { $0 == .trace || $0 == .debug })
        let ids = Set(backends.logs.entries.map { $0.metadata["request_id"].map { "\($0)" } })
        #expect(ids.count == 1 && !ids.contains(nil))
        let requests = MetricName.requests
        #expect(
          backends.count(
            requests, [("endpoint", "single"), ("source", "cepis"), ("outcome", "503")])
            == 1)
        #expect(
          backends.count(
            requests, [("endpoint", "single"), ("source", "cepis"), ("outcome", "200")])
            == 1)
        #expect(
          backends.count(MetricName.retries, [("endpoint", "single"), ("reason", "503")]) == 1)
        let timer = try backends.metrics.expectTimer(
          MetricName.callDuration, [("call", "lookup"), ("outcome", "success")])
        #expect(timer.values.count == 1)
        let span = try onlySpan(backends)
        #expect(span.operationName == "cepis.lookup")
        #expect(span.kind == .client)
        #expect(span.attributes["server.address"]?.toSpanAttribute() == .string("127.0.0.1"))
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        #expect(span.attributes["cepis.attempts"]?.toSpanAttribute() == .int64(2))
        #expect(span.attributes["cepis.source"]?.toSpanAttribute() == .string("cepis"))
        #expect(span.status == nil)
        #expect(
          span.events.map(\.name) == [
            "attempt started", "attempt ended", "retry scheduled", "attempt started",
            "attempt ended", "answered",
          ])
      }
    }

    @Test("a 429 with Retry-After", arguments: testedTransportKinds)
    func rateLimited(transport: Transport.Kind) async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let client = fastClient(server, transport).observed(by: backends.observer)
        server.script(.cep, [.status(429, retryAfter: "1")])
        _ = try await client.lookup(Self.known)
        #expect(
          backends.messages == [
            "call started", "attempt started", "attempt ended", "rate limited",
            "retry scheduled", "attempt started", "attempt ended", "answered", "call ended",
          ])
        let limited = backends.logs.entries.first { "\($0.message)" == "rate limited" }
        #expect(limited?.metadata["retry_after_seconds"] == "1.000")
        #expect(backends.count(MetricName.rateLimited, [("endpoint", "single")]) == 1)
        #expect(
          backends.count(MetricName.retries, [("endpoint", "single"), ("reason", "429")]) == 1)
        #expect(try onlySpan(backends).attributes["cepis.attempts"]?.toSpanAttribute() == .int64(2))
      }
    }

    @Test("cep.is down, ViaCEP answering", arguments: testedTransportKinds)
    func fallbackAnswers(transport: Transport.Kind) async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let client = makeClient(
          transport, baseURL: server.baseURL, maxAttempts: 1,
          fallbacks: [.viaCEP(baseURL: server.baseURL)]
        ).observed(by: backends.observer)
        server.setMode(.cep, [.status(503)])
        _ = try await client.lookup(Self.known)
        #expect(
          backends.messages == [
            "call started", "attempt started", "attempt ended", "fallback started",
            "fallback ended", "answered", "call ended",
          ])
        #expect(
          backends.count(MetricName.fallbacks, [("provider", "viacep"), ("kind", "fallback")]) == 1)
        #expect(
          backends.count(
            MetricName.requests,
            [("endpoint", "single"), ("source", "viacep"), ("outcome", "found")]) == 1)
        let span = try onlySpan(backends)
        #expect(span.attributes["cepis.source"]?.toSpanAttribute() == .string("viacep"))
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(503))
      }
    }

    @Test("a hedge won by the fallback", arguments: testedTransportKinds)
    func hedge(transport: Transport.Kind) async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let client = makeClient(
          transport, baseURL: server.baseURL, timeout: 120, maxAttempts: 1,
          fallbacks: [.viaCEP(baseURL: server.baseURL)], hedgeAfter: 0.05
        ).observed(by: backends.observer)
        // cep.is holds its answer far longer than any scheduling delay: the hedge must win.
        server.script(.cep, [.delayHeaders(60)])
        _ = try await client.lookup(Self.known)
        #expect(backends.messages.contains("hedge started"))
        #expect(
          backends.count(MetricName.fallbacks, [("provider", "viacep"), ("kind", "hedge")]) == 1)
        let span = try onlySpan(backends)
        #expect(span.attributes["cepis.source"]?.toSpanAttribute() == .string("viacep"))
        #expect(span.events.map(\.name).contains("hedge started"))
      }
    }

    @Test("a stale cache answer", arguments: testedTransportKinds)
    func stale(transport: Transport.Kind) async throws {
      try await withTemporaryFolder { folder in
        try await withMockServer { server in
          let clock = ManualClock()
          let cache = makeCache(.memory, folder: folder, clock: clock)
          let backends = ObservabilityBackends()
          let client = cachedClient(server, transport, cache: cache)
            .observed(by: backends.observer)
          _ = try await client.lookup(Self.known)
          _ = try await client.lookup(Self.known)
          server.setEdition("2026-12")
          clock.advance(3_601)
          server.setMode(.cep, [.status(503)])
          _ = try await client.lookup(Self.known)
          #expect(backends.count(MetricName.cacheResults, [("result", "miss")]) == 2)
          #expect(backends.count(MetricName.cacheResults, [("result", "hit")]) == 1)
          #expect(backends.count(MetricName.cacheResults, [("result", "stale")]) == 1)
          #expect(backends.count(MetricName.editionChanges) == 1)
          #expect(backends.messages.contains("stale answer served"))
          #expect(backends.messages.contains("edition changed"))
          let lookups = backends.tracer.finishedSpans.filter { $0.operationName == "cepis.lookup" }
          #expect(
            lookups.map { $0.attributes["cepis.cache_result"]?.toSpanAttribute() }
              == [.string("miss"), .string("hit"), .string("stale")])
          // The health checks the cache made are spans of their own, within the lookups'.
          let health = backends.tracer.finishedSpans.filter { $0.operationName == "cepis.health" }
          #expect(health.count == 2)
          let lookupIDs = Set(lookups.map(\.spanID))
          #expect(health.allSatisfy { $0.parentSpanID.map(lookupIDs.contains) == true })
        }
      }
    }

    @Test("a retry budget run dry", arguments: testedTransportKinds)
    func budgetDry(transport: Transport.Kind) async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let budget = RetryBudget(capacity: 5, retryCost: 5, timeoutRetryCost: 5, successRefund: 1)
        let client = fastClient(server, transport, retryBudget: budget)
          .observed(by: backends.observer)
        server.setMode(.cep, [.status(503)])
        await #expect(throws: CepisError.self) { try await client.lookup(Self.known) }
        #expect(backends.messages.suffix(2) == ["retry budget refused a retry", "call ended"])
        #expect(backends.count(MetricName.retryBudgetRefusals, [("endpoint", "single")]) == 1)
        let span = try onlySpan(backends)
        #expect(span.attributes["error.type"]?.toSpanAttribute() == .string("server_error"))
        #expect(span.status?.code == .error)
        #expect(span.errors.isEmpty)
        let timer = try backends.metrics.expectTimer(
          MetricName.callDuration, [("call", "lookup"), ("outcome", "server_error")])
        #expect(timer.values.count == 1)
      }
    }

    @Test("a cancelled call", arguments: testedTransportKinds)
    func cancelled(transport: Transport.Kind) async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let client = fastClient(server, transport).observed(by: backends.observer)
        server.setMode(.cep, [.delayHeaders(10)])
        let call = Task { try await client.lookup(Self.known) }
        while !backends.messages.contains("attempt started") {
          try await Task.sleep(nanoseconds: 5_000_000)
        }
        call.cancel()
        _ = await call.result
        let ended = backends.logs.entries.last
        #expect(ended.map { "\($0.message)" } == "call ended")
        #expect(ended?.metadata["error.type"] == "cancelled")
        let span = try onlySpan(backends)
        #expect(span.attributes["error.type"]?.toSpanAttribute() == .string("cancelled"))
      }
    }

    @Test("lookupMany: a span per chunk under the call's span", arguments: testedTransportKinds)
    func lookupManySpans(transport: Transport.Kind) async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let client = fastClient(server, transport).observed(by: backends.observer)
        let ceps = (0..<700).map { number -> String in
          let digits = String(1_001_000 + number * 7)
          return String(repeating: "0", count: 8 - digits.count) + digits
        }
        _ = try await client.lookupMany(ceps)
        let spans = backends.tracer.finishedSpans
        let root = try #require(spans.first { $0.operationName == "cepis.lookup_many" })
        let chunks = spans.filter { $0.operationName == "cepis.lookups_chunk" }
        #expect(chunks.count == 2)
        #expect(chunks.allSatisfy { $0.parentSpanID == root.spanID })
        #expect(backends.metrics.timers.contains { $0.label == MetricName.callDuration })
      }
    }

    @Test("no backend, tracer or logger at debug: nobody listens, and a call makes no scope")
    func notListening() async throws {
      // No test bootstraps a process-wide system: the defaults are the no-op ones.
      func logger(_ level: Logger.Level) -> Logger {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "cepis.tests") { _ in handler }
        logger.logLevel = level
        return logger
      }
      #expect(!ObservabilityObserver(logger: nil).isListening)
      #expect(!ObservabilityObserver(logger: logger(.info)).isListening)
      #expect(ObservabilityObserver(logger: logger(.debug)).isListening)
      #expect(ObservabilityObserver(logger: nil, metrics: TestMetrics()).isListening)
      #expect(ObservabilityObserver(logger: nil, tracer: InMemoryTracer()).isListening)
      withLogger(logger(.trace)) { _ in
        #expect(ObservabilityObserver(logger: nil).isListening)
      }
      let unobserved = try await CallScope.observe(
        .lookup, server: "cep.is", observer: ObservabilityObserver(logger: logger(.info)),
        { CallScope.current == nil })
      #expect(unobserved)
      let observed = try await CallScope.observe(
        .lookup, server: "cep.is", observer: ObservabilityObserver(logger: logger(.debug)),
        { CallScope.current != nil })
      #expect(observed)
    }

    @Test("the caller's ServiceContext is the parent; the task-local logger wins")
    func callerContextAndTaskLogger() async throws {
      try await withMockServer { server in
        let backends = ObservabilityBackends()
        let client = fastClient(server, .urlSession).observed(by: backends.observer)
        let parent = backends.tracer.startSpan("checkout")
        let taskLogs = ObservabilityBackends()
        try await ServiceContext.withValue(parent.context) {
          try await withLogger(taskLogs.logger) { _ in
            _ = try await client.lookup(Self.known)
          }
        }
        parent.end()
        let span = try #require(
          backends.tracer.finishedSpans.first { $0.operationName == "cepis.lookup" })
        #expect(span.parentSpanID == parent.context.inMemorySpanContext?.spanID)
        #expect(span.traceID == parent.context.inMemorySpanContext?.traceID)
        #expect(backends.messages.isEmpty)
        #expect(taskLogs.messages.first == "call started")
      }
    }

    #if AsyncHTTPClient
      @Test("AsyncHTTPClient's own span nests under the call's")
      func transportSpanNests() async throws {
        try await withMockServer { server in
          let backends = ObservabilityBackends()
          var configuration = HTTPClient.Configuration()
          configuration.tracing.tracer = backends.tracer
          // Room for a loaded machine: the span tree is the point, not the deadline.
          let client = Client(
            baseURL: server.baseURL, timeout: 30, maxAttempts: 1,
            transport: .asyncHTTPClient(configuration: configuration)
          ).observed(by: backends.observer)
          _ = try await client.lookup(Self.known)
          let spans = backends.tracer.finishedSpans
          let root = try #require(spans.first { $0.operationName == "cepis.lookup" })
          let get = try #require(spans.first { $0.operationName == "GET" })
          #expect(get.parentSpanID == root.spanID)
        }
      }
    #endif
  }
#endif
