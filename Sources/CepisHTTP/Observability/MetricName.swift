#if Observability
  import CoreMetrics

  /// The metrics the `Observability` trait records, named by Prometheus's conventions (the
  /// `cepis_` prefix, `_total` counters, `_seconds` timers); the Cepis catalog's article
  /// "Observe Cepis in production" documents each with its labels.
  package enum MetricName {
    /// HTTP attempts and fallback asks, by `endpoint`, `source` and `outcome`.
    package static let requests = "cepis_requests_total"
    /// Retries scheduled, by `endpoint` and `reason`.
    package static let retries = "cepis_retries_total"
    /// 429 answers, by `endpoint`.
    package static let rateLimited = "cepis_rate_limited_total"
    /// Attempts that waited for their turn under the client's own rate limit.
    package static let rateLimitWaits = "cepis_rate_limit_waits_total"
    /// Retries the retry budget refused, by `endpoint`.
    package static let retryBudgetRefusals = "cepis_retry_budget_refusals_total"
    /// Fallback providers asked, by `provider` and `kind` (`fallback`, `hedge`).
    package static let fallbacks = "cepis_fallbacks_total"
    /// Fallback providers skipped (budget spent, cooling down), by `provider`.
    package static let fallbackSkips = "cepis_fallback_skips_total"
    /// CEPs the cache answered or not, by `result` (`hit`, `miss`, `stale`).
    package static let cacheResults = "cepis_cache_results_total"
    /// Changes of the live DNE edition.
    package static let editionChanges = "cepis_edition_changes_total"
    /// Pauses of bulk runs after a 429.
    package static let bulkPauses = "cepis_bulk_pauses_total"
    /// The duration of each public call, by `call` and `outcome`.
    package static let callDuration = "cepis_call_duration_seconds"
  }

  extension ObservabilityObserver {
    /// Counts `event` of `call`.
    func count(_ event: ClientEvent, in call: CallScope) {
      let factory = metrics ?? MetricsSystem.factory
      func increment(_ label: String, _ dimensions: [(String, String)], by amount: Int = 1) {
        Counter(label: label, dimensions: dimensions, factory: factory).increment(by: amount)
      }
      let source = call.operation == .cpfLookup ? "cpfhub" : "cepis"
      switch event {
      case .attemptEnded(let endpoint, _, let status, let errorType, _):
        let outcome = status.map(String.init) ?? errorType ?? "other"
        increment(
          MetricName.requests, [("endpoint", endpoint), ("source", source), ("outcome", outcome)])
      case .retryScheduled(let endpoint, _, _, let reason):
        increment(MetricName.retries, [("endpoint", endpoint), ("reason", reason)])
      case .rateLimited(let endpoint, _):
        increment(MetricName.rateLimited, [("endpoint", endpoint)])
      case .retryBudgetRefused(let endpoint):
        increment(MetricName.retryBudgetRefusals, [("endpoint", endpoint)])
      case .fallbackStarted(let provider, let hedged):
        increment(
          MetricName.fallbacks, [("provider", provider), ("kind", hedged ? "hedge" : "fallback")])
      case .fallbackEnded(let provider, let outcome):
        increment(
          MetricName.requests,
          [("endpoint", "single"), ("source", provider), ("outcome", outcome)])
      case .fallbackSkipped(let provider):
        increment(MetricName.fallbackSkips, [("provider", provider)])
      case .cache(let result, let count):
        increment(MetricName.cacheResults, [("result", result.rawValue)], by: count)
      case .editionChanged:
        increment(MetricName.editionChanges, [])
      case .paced:
        increment(MetricName.rateLimitWaits, [])
      case .bulkPaused:
        increment(MetricName.bulkPauses, [])
      case .attemptStarted, .answered, .chunkSent:
        break
      }
    }
  }
#endif
