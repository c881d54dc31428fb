/// The public call a ``CallScope`` belongs to; its raw value names the call in every log
/// line, metric label and span.
package enum CallOperation: String, Sendable, CaseIterable {
  /// `Client.lookup`.
  case lookup
  /// `Client.lookupMany`.
  case lookupMany = "lookup_many"
  /// One chunk of `Client.lookups` (and of `lookupMany`, under its call).
  case lookupsChunk = "lookups_chunk"
  /// `Client.health`.
  case health
  /// `CPFClient.lookup`.
  case cpfLookup = "cpf_lookup"
}

/// Where a lookup's answer came from, or whether the cache answered it.
package enum CacheResult: String, Sendable {
  /// A fresh entry of the live edition answered: no request.
  case hit
  /// No usable entry: the network was asked.
  case miss
  /// Every source failed and an entry of another edition answered, marked stale.
  case stale
}

/// What the HTTP core, the fallbacks, the cache and the bulk engine report about one call.
///
/// Every value is a status, a count, a duration, a fixed name (an endpoint, a provider, an
/// error's kind) or a DNE edition: never a URL, a header, a body, an error's message, an API
/// key, a CPF or a name. What enters an event can therefore go to any log, metric or span.
package enum ClientEvent: Sendable, Equatable {
  /// An attempt is about to be sent to `endpoint` (`single`, `batch`, `health`, `cpf`).
  case attemptStarted(endpoint: String, attempt: Int)
  /// An attempt ended: with an HTTP `status`, or with an error of kind `errorType`
  /// (`network`, `timeout`, …), after `seconds`.
  case attemptEnded(
    endpoint: String, attempt: Int, status: Int?, errorType: String?, seconds: Double)
  /// The attempt's outcome is retried after `wait` seconds; `reason` is its status or kind.
  case retryScheduled(endpoint: String, attempt: Int, wait: Double, reason: String)
  /// A 429 arrived; `retryAfter` is what the server asked for, when it said.
  case rateLimited(endpoint: String, retryAfter: Double?)
  /// The client-wide retry budget refused a retry: the call ends with its last failure.
  case retryBudgetRefused(endpoint: String)
  /// An attempt waits `seconds` for its turn under the client's own rate limit.
  case paced(seconds: Double)
  /// A bulk run's senders all pause after a 429 (`seconds`, when the server said), and ask again.
  case bulkPaused(seconds: Double?)
  /// A fallback provider is asked; `hedged` when cep.is has not failed yet.
  case fallbackStarted(provider: String, hedged: Bool)
  /// A fallback provider's attempt ended: `found`, `not_found` or `failed`.
  case fallbackEnded(provider: String, outcome: String)
  /// A fallback provider was skipped: its budget is spent or it is cooling down.
  case fallbackSkipped(provider: String)
  /// The cache answered `count` CEPs with `result`.
  case cache(CacheResult, count: Int)
  /// The live DNE edition changed from `from` (when one was known) to `to`.
  case editionChanged(from: String?, to: String)
  /// The service that answered the call: `cepis`, `cache`, `viacep`, `brasilapi`, `cpfhub`.
  case answered(source: String)
  /// A chunk of a bulk run is sent with `size` CEPs.
  case chunkSent(size: Int)
}

extension ClientEvent {
  /// The kind of an ``HTTPFailure``, for events: never its message.
  package static func kind(of failure: HTTPFailure) -> String {
    switch failure {
    case .rateLimited: return "rate_limited"
    case .serverError: return "server_error"
    case .network: return "network"
    case .timedOut: return "timeout"
    case .bodyTooLarge: return "body_too_large"
    case .redirectLoop: return "redirect_loop"
    case .rateLimitedLocally: return "rate_limited_locally"
    }
  }
}
