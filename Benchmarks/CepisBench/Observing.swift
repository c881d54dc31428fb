// `--observe`: who listens to a measured client's events, for the Observability trait's
// overhead rows.

import Cepis
import CepisHTTP

#if Observability
  import InMemoryLogging
  import InMemoryTracing
  import Logging
  import MetricsTestKit
#endif

/// Whether this build has the `Observability` trait.
#if Observability
  let hasObservability = true
#else
  let hasObservability = false
#endif

/// `client` with the listener `--observe` names: `none` (observability off, even in a build
/// with the trait), `default` (the build's own: with the trait, the adapter on whatever backends
/// the process bootstrapped, here none) or `memory` (trait builds: a logger at `trace`, metrics
/// and a tracer, all three recording in memory).
func observed(_ client: Client, _ args: Arguments) -> Client {
  switch args.options["observe"] ?? "default" {
  case "none":
    return client.observed(by: nil)
  case "default":
    return client
  case "memory":
    #if Observability
      let logs = InMemoryLogHandler()
      var logger = Logger(label: "cepis.bench") { _ in logs }
      logger.logLevel = .trace
      return client.observed(
        by: ObservabilityObserver(logger: logger, metrics: TestMetrics(), tracer: InMemoryTracer()))
    #else
      fail("--observe memory needs a build with the Observability trait")
    #endif
  default:
    fail("--observe none|default|memory")
  }
}

/// `observe-adapter --calls N`: the adapter alone, with no network: N calls of a single
/// lookup's scope and events (an attempt started and ended with a 200, the answer's source),
/// observed by the adapter with all three backends in memory, beside the same calls unobserved;
/// the CPU of each per call, and the difference (what the trait adds to a lookup).
func benchObserveAdapter(calls: Int) async {
  #if Observability
    func run(_ observer: (any ClientEventObserver)?) async -> Double {
      let cpu0 = processCPUSeconds()
      for _ in 0..<calls {
        _ = try? await CallScope.observe(.lookup, server: "127.0.0.1", observer: observer) {
          CallScope.current?.record(.attemptStarted(endpoint: "single", attempt: 1))
          CallScope.current?.record(
            .attemptEnded(
              endpoint: "single", attempt: 1, status: 200, errorType: nil, seconds: 0.0002))
          CallScope.current?.record(.answered(source: "cepis"))
          return 0
        }
      }
      return (processCPUSeconds() - cpu0) / Double(calls) * 1e6
    }
    let logs = InMemoryLogHandler()
    var logger = Logger(label: "cepis.bench") { _ in logs }
    logger.logLevel = .trace
    let observer = ObservabilityObserver(
      logger: logger, metrics: TestMetrics(), tracer: InMemoryTracer())
    _ = await run(observer)  // warm-up
    let off = await run(nil)
    let on = await run(observer)
    report("off_cpu_us_per_call", format(off, 2))
    report("on_cpu_us_per_call", format(on, 2))
    report("added_cpu_us_per_call", format(on - off, 2))
  #else
    fail("observe-adapter needs a build with the Observability trait")
  #endif
}
