#if Observability
  import CoreMetrics
  import Logging
  import Tracing

  /// The `Observability` trait's adapter: a call's events as swift-log lines, swift-metrics
  /// counters and a timer, and a swift-distributed-tracing client span.
  ///
  /// Logs go to the task-local logger (swift-log's `withLogger`) when the caller set one,
  /// else to the client's own, else nowhere; trace and debug only, fixed messages, values in
  /// metadata. Metrics go to `MetricsSystem.factory` and spans to `InstrumentationSystem.tracer`
  /// (read at each call, so a bootstrap after the client was made counts), unless given here.
  /// Nothing but an event's fields and the call's summary reaches any of the three.
  package struct ObservabilityObserver: ClientEventObserver {
    /// The client's own logger, used when the task has none.
    package let logger: Logger?
    /// The metrics factory, or `nil` for `MetricsSystem.factory`.
    package let metrics: (any MetricsFactory)?
    /// The tracer, or `nil` for `InstrumentationSystem.tracer`.
    package let tracer: (any Tracer)?

    /// An adapter logging to `logger` (when the task sets none), counting through `metrics`
    /// and tracing through `tracer` (`nil`: the bootstrapped systems).
    package init(
      logger: Logger?, metrics: (any MetricsFactory)? = nil, tracer: (any Tracer)? = nil
    ) {
      self.logger = logger
      self.metrics = metrics
      self.tracer = tracer
    }

    package func observe<Value>(
      _ call: CallScope, _ body: () async throws -> Value
    ) async throws -> Value {
      let tracer = self.tracer ?? InstrumentationSystem.tracer
      let span = tracer.startSpan(
        Self.spanName(call.operation), context: ServiceContext.current ?? .topLevel,
        ofKind: .client)
      span.attributes["server.address"] = call.serverAddress
      span.attributes["cepis.request_id"] = call.requestID
      call.attachment.withLock { $0 = span }
      let logger = currentLogger()
      logger?.debug(
        "call started",
        metadata: metadata(call, ["server.address": .string(call.serverAddress)]),
        source: Self.source)
      let started = DefaultTracerClock.now.nanosecondsSinceEpoch
      let outcome: String
      let value: Value
      do {
        value = try await ServiceContext.withValue(span.context) { try await body() }
        outcome = "success"
      } catch {
        outcome = call.errorKind(error)
        finish(call, span: span, logger: logger, outcome: outcome, since: started, failed: true)
        throw error
      }
      finish(call, span: span, logger: logger, outcome: outcome, since: started, failed: false)
      return value
    }

    /// Whether a call starting now would leave any trace: a tracer other than the no-op one, a
    /// metrics factory other than the no-op one, or a logger at `debug` or below. A program
    /// that bootstrapped no backend and set no logger pays no scope, span or event per call.
    package var isListening: Bool {
      if !((tracer ?? InstrumentationSystem.tracer) is NoOpTracer) { return true }
      if !((metrics ?? MetricsSystem.factory) is NOOPMetricsHandler) { return true }
      if let logger = currentLogger(), logger.logLevel <= .debug { return true }
      return false
    }

    package func record(_ event: ClientEvent, in call: CallScope) {
      // An event's fields are made only for a logger at its level or a recording span.
      if let logger = currentLogger() {
        logger.log(
          level: event.level == .trace ? .trace : .debug, "\(event.message)",
          metadata: metadata(call, Self.metadata(event.fields)), source: Self.source)
      }
      if let span = call.attachment.withLock({ $0 }) as? any Span, span.isRecording {
        var attributes = SpanAttributes()
        for field in event.fields { attributes[field.key] = field.value }
        span.addEvent(SpanEvent(name: event.message, attributes: attributes))
      }
      count(event, in: call)
    }

    /// The logger of this call: the task's, when the caller set one with `withLogger`; the
    /// client's; or none.
    private func currentLogger() -> Logger? {
      let taskLocal = Logger.current
      // swift-log's unbound default has an empty label: no `withLogger` scope is active.
      if !taskLocal.label.isEmpty { return taskLocal }
      return logger
    }

    /// An event's fields as log metadata.
    private static func metadata(_ fields: [(key: String, value: String)]) -> Logger.Metadata {
      var metadata: Logger.Metadata = [:]
      for field in fields { metadata[field.key] = .string(field.value) }
      return metadata
    }

    private func metadata(_ call: CallScope, _ extra: Logger.Metadata) -> Logger.Metadata {
      var metadata = extra
      metadata["request_id"] = .string(call.requestID)
      metadata["call"] = .string(call.operation.rawValue)
      return metadata
    }

    private func finish(
      _ call: CallScope, span: any Span, logger: Logger?, outcome: String, since started: UInt64,
      failed: Bool
    ) {
      let elapsed = DefaultTracerClock.now.nanosecondsSinceEpoch &- started
      let summary = call.summary
      span.attributes["cepis.attempts"] = summary.attempts
      if let status = summary.lastStatus { span.attributes["http.response.status_code"] = status }
      if let source = summary.source { span.attributes["cepis.source"] = source }
      if let cache = summary.cacheResult { span.attributes["cepis.cache_result"] = cache.rawValue }
      if failed {
        span.attributes["error.type"] = outcome
        // No message: an error's text may quote a server's body.
        span.setStatus(SpanStatus(code: .error))
      }
      span.end()
      call.attachment.withLock { $0 = nil }
      logger?.debug(
        "call ended", metadata: metadata(call, Self.ended(summary, elapsed, outcome, failed)),
        source: Self.source)
      let factory = metrics ?? MetricsSystem.factory
      CoreMetrics.Timer(
        label: MetricName.callDuration,
        dimensions: [("call", call.operation.rawValue), ("outcome", outcome)], factory: factory
      ).recordNanoseconds(Int64(clamping: elapsed))
    }

    /// The metadata of a call's last line.
    private static func ended(
      _ summary: CallSummary, _ elapsed: UInt64, _ outcome: String, _ failed: Bool
    ) -> Logger.Metadata {
      var fields: Logger.Metadata = [
        "duration_seconds": .string(ClientEvent.seconds(Double(elapsed) / 1e9)),
        "attempts": .string(String(summary.attempts)),
        "outcome": .string(failed ? "failure" : "success"),
      ]
      if failed { fields["error.type"] = .string(outcome) }
      if let source = summary.source { fields["source"] = .string(source) }
      if let cache = summary.cacheResult { fields["cache"] = .string(cache.rawValue) }
      return fields
    }

    /// Every line's source: the library, for both clients (given, so that swift-log does not
    /// derive it from the file's id at each line).
    static let source = "Cepis"

    /// The span's name: `cepis.lookup`, `cepis.lookup_many`, `cepis.lookups_chunk`,
    /// `cepis.health`, `cpfhub.lookup`.
    static func spanName(_ operation: CallOperation) -> String {
      operation == .cpfLookup ? "cpfhub.lookup" : "cepis.\(operation.rawValue)"
    }
  }
#endif
