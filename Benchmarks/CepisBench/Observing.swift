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
