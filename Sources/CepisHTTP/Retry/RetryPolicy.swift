import Foundation

/// The knobs of one client's retry loop, shared by the CEP and CPF clients.
package struct RetryPolicy: Sendable, Equatable {
  /// Attempts in all, the first included (at least 1).
  package var maxAttempts: Int
  /// The cap of the first backoff window, in seconds; it doubles with each retry.
  package var backoffBase: TimeInterval
  /// The largest wait between attempts, Retry-After included.
  package var backoffMax: TimeInterval
  /// The deadline of one attempt, headers and body together.
  package var attemptTimeout: TimeInterval
  /// The deadline of the whole call: attempts, waits and bodies. `nil` for none.
  package var totalTimeout: TimeInterval?

  /// Creates a policy, clamping nonsensical values to the nearest sensible ones.
  package init(
    maxAttempts: Int,
    backoffBase: TimeInterval,
    backoffMax: TimeInterval,
    attemptTimeout: TimeInterval,
    totalTimeout: TimeInterval?
  ) {
    self.maxAttempts = max(1, maxAttempts)
    self.backoffBase = max(0, backoffBase.isFinite ? backoffBase : 0)
    self.backoffMax = max(0, backoffMax.isFinite ? backoffMax : 0)
    self.attemptTimeout = attemptTimeout.isFinite && attemptTimeout > 0 ? attemptTimeout : 0.001
    if let totalTimeout {
      self.totalTimeout = totalTimeout.isFinite && totalTimeout > 0 ? totalTimeout : 0.001
    } else {
      self.totalTimeout = nil
    }
  }

  /// The full-jitter wait before attempt `retry + 1`, where `retry` counts from 1.
  ///
  /// The window is `min(backoffBase · 2^(retry−1), backoffMax)` and `unitRandom` (in
  /// `0..<1`) picks a point in it uniformly, as in "Exponential Backoff And Jitter" (AWS).
  func jitteredBackoff(retry: Int, unitRandom: Double) -> TimeInterval {
    let exponent = Double(max(0, retry - 1))
    let window = min(backoffBase * pow(2, min(exponent, 62)), backoffMax)
    let unit = unitRandom.isFinite ? min(max(unitRandom, 0), 1) : 0
    return window * unit
  }

  /// The wait before the next attempt: the server's `Retry-After` when it gave one (capped
  /// at `backoffMax`), otherwise the jittered backoff.
  func delay(retry: Int, retryAfter: TimeInterval?, unitRandom: Double) -> TimeInterval {
    if let retryAfter {
      return min(max(0, retryAfter), backoffMax)
    }
    return jitteredBackoff(retry: retry, unitRandom: unitRandom)
  }

  /// Whether a response status is worth another attempt: 429 and the transient 5xx.
  static func isRetriableStatus(_ status: Int) -> Bool {
    status == 429 || status == 500 || status == 502 || status == 503 || status == 504
  }
}
