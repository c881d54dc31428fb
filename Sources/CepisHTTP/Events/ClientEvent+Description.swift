/// How verbose an event is: the only two levels a library logs at (swift.org's guide).
package enum EventLevel: Int, Sendable, Comparable {
  /// Every attempt's start: for following one call closely.
  case trace
  /// Everything else: attempts' ends, retries, waits, fallbacks, hedges, the cache.
  case debug

  package static func < (lhs: EventLevel, rhs: EventLevel) -> Bool {
    lhs.rawValue < rhs.rawValue
  }
}

extension ClientEvent {
  /// The event's level.
  package var level: EventLevel {
    if case .attemptStarted = self { return .trace }
    return .debug
  }

  /// The event's fixed message: values go in ``fields``.
  package var message: String {
    switch self {
    case .attemptStarted: return "attempt started"
    case .attemptEnded: return "attempt ended"
    case .retryScheduled: return "retry scheduled"
    case .rateLimited: return "rate limited"
    case .retryBudgetRefused: return "retry budget refused a retry"
    case .paced: return "rate limit wait"
    case .bulkPaused: return "bulk run paused"
    case .fallbackStarted(_, let hedged): return hedged ? "hedge started" : "fallback started"
    case .fallbackEnded: return "fallback ended"
    case .fallbackSkipped: return "fallback skipped"
    case .cache(.hit, _): return "cache hit"
    case .cache(.miss, _): return "cache miss"
    case .cache(.stale, _): return "stale answer served"
    case .editionChanged: return "edition changed"
    case .answered: return "answered"
    case .chunkSent: return "chunk sent"
    }
  }

  /// The event's values as metadata keys and texts, in a fixed order.
  package var fields: [(key: String, value: String)] {
    switch self {
    case .attemptStarted(let endpoint, let attempt):
      return [("endpoint", endpoint), ("attempt", String(attempt))]
    case .attemptEnded(let endpoint, let attempt, let status, let errorType, let seconds):
      var fields = [("endpoint", endpoint), ("attempt", String(attempt))]
      if let status { fields.append(("http.response.status_code", String(status))) }
      if let errorType { fields.append(("error.type", errorType)) }
      fields.append(("duration_seconds", Self.seconds(seconds)))
      return fields.map { (key: $0.0, value: $0.1) }
    case .retryScheduled(let endpoint, let attempt, let wait, let reason):
      return [
        ("endpoint", endpoint), ("attempt", String(attempt)), ("wait_seconds", Self.seconds(wait)),
        ("reason", reason),
      ]
    case .rateLimited(let endpoint, let retryAfter):
      return [("endpoint", endpoint)] + Self.optional("retry_after_seconds", retryAfter)
    case .retryBudgetRefused(let endpoint):
      return [("endpoint", endpoint)]
    case .paced(let seconds):
      return [("wait_seconds", Self.seconds(seconds))]
    case .bulkPaused(let seconds):
      return Self.optional("retry_after_seconds", seconds)
    case .fallbackStarted(let provider, _), .fallbackSkipped(let provider):
      return [("provider", provider)]
    case .fallbackEnded(let provider, let outcome):
      return [("provider", provider), ("outcome", outcome)]
    case .cache(_, let count):
      return [("count", String(count))]
    case .editionChanged(let from, let to):
      return (from.map { [(key: "from", value: $0)] } ?? []) + [("to", to)]
    case .answered(let source):
      return [("source", source)]
    case .chunkSent(let size):
      return [("size", String(size))]
    }
  }

  /// Seconds with millisecond precision, as text.
  package static func seconds(_ value: Double) -> String {
    guard value.isFinite else { return String(value) }
    let milliseconds = (max(0, value) * 1000).rounded()
    let whole = Int(milliseconds) / 1000
    let fraction = Int(milliseconds) % 1000
    let digits = String(fraction)
    return "\(whole).\(String(repeating: "0", count: 3 - digits.count))\(digits)"
  }

  private static func optional(
    _ key: String, _ value: Double?
  ) -> [(key: String, value: String)] {
    value.map { [(key: key, value: seconds($0))] } ?? []
  }
}
