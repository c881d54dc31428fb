#if Observability
  import CepisHTTP
  import InMemoryLogging
  import InMemoryTracing
  import Logging
  import MetricsTestKit
  import Tracing

  /// The three backends in memory, for one test: swift-log's `InMemoryLogHandler`,
  /// swift-metrics' `TestMetrics` and swift-distributed-tracing's `InMemoryTracer`, handed to
  /// the trait's adapter directly (no process-wide bootstrap, so tests run in parallel).
  package struct ObservabilityBackends: Sendable {
    /// Every log line.
    package let logs = InMemoryLogHandler()
    /// Every metric.
    package let metrics = TestMetrics()
    /// Every span.
    package let tracer = InMemoryTracer()

    /// Fresh, empty backends.
    package init() {}

    /// A logger at `trace` into ``logs``.
    package var logger: Logger {
      let handler = logs
      var logger = Logger(label: "cepis.tests") { _ in handler }
      logger.logLevel = .trace
      return logger
    }

    /// The trait's adapter, writing into these backends.
    package var observer: ObservabilityObserver {
      ObservabilityObserver(logger: logger, metrics: metrics, tracer: tracer)
    }

    /// The messages logged, in order.
    package var messages: [String] { logs.entries.map { "\($0.message)" } }

    /// The total of the counter `label` with exactly `dimensions`, 0 when it was never made.
    package func count(_ label: String, _ dimensions: [(String, String)] = []) -> Int64 {
      (try? metrics.expectCounter(label, dimensions))?.totalValue ?? 0
    }

    /// Every text the three backends hold: messages, metadata keys and values, metric labels
    /// and dimensions, span names, attributes, events and statuses.
    package var everything: [String] {
      var texts: [String] = []
      for entry in logs.entries {
        texts.append("\(entry.message)")
        for (key, value) in entry.metadata { texts += [key, "\(value)"] }
        if let error = entry.error { texts.append("\(error)") }
      }
      for counter in metrics.counters {
        texts.append(counter.label)
        for (key, value) in counter.dimensions { texts += [key, value] }
      }
      for timer in metrics.timers {
        texts.append(timer.label)
        for (key, value) in timer.dimensions { texts += [key, value] }
      }
      for span in tracer.finishedSpans {
        texts.append(span.operationName)
        // SpanAttributes is no Sequence: forEach is its only way through.
        // swift-format-ignore: ReplaceForEachWithForLoop
        span.attributes.forEach { key, value in texts += [key, "\(value)"] }
        for event in span.events {
          texts.append(event.name)
          // swift-format-ignore: ReplaceForEachWithForLoop
          event.attributes.forEach { key, value in texts += [key, "\(value)"] }
        }
        if let status = span.status { texts.append("\(status)") }
        for error in span.errors { texts.append("\(error.error)") }
      }
      return texts
    }
  }
#endif
