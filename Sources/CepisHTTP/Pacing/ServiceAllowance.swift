import CepisSupport
import Foundation

/// How often a service that is not the client's own API may be asked (a public fallback): a
/// token bucket, and a cool-down after the service said no. Pure arithmetic on a clock the
/// caller passes in.
package struct ServiceAllowance: Sendable, Equatable {
  private var bucket: TokenBucket?
  private let coolDown: TimeInterval
  /// The service is not asked before this instant.
  package private(set) var coolingUntil = -Double.infinity

  /// A full allowance at `now`: `requestsPerSecond` on average (`nil`: no limit), `burst` at
  /// once, and `coolDown` seconds without asking after the service refused.
  package init(requestsPerSecond: Double?, burst: Int, coolDown: TimeInterval, now: Double) {
    self.bucket = requestsPerSecond.map {
      TokenBucket(rate: $0, capacity: Double(max(1, burst)), now: now)
    }
    self.coolDown = max(0, coolDown)
  }

  /// Spends one request when the allowance has one at `now`; `false` (nothing spent) when it
  /// is spent or the service is cooling down.
  package mutating func permit(now: Double) -> Bool {
    guard now >= coolingUntil else { return false }
    guard var bucket else { return true }
    defer { self.bucket = bucket }
    return bucket.take(now: now)
  }

  /// The service refused (429, 403) at `now`, asking for `retryAfter` seconds, if anything:
  /// it is not asked for the cool-down, or that long when longer.
  package mutating func refused(now: Double, retryAfter: TimeInterval?) {
    coolingUntil = max(coolingUntil, now + max(coolDown, retryAfter ?? 0))
  }
}

/// The allowances of one ``Transport`` value, by service: the clients built on the value
/// share them (``Transport/default`` is one value for the whole process).
package final class AllowanceRegistry: Sendable {
  private let allowances = LockedValue<[String: ServiceAllowance]>([:])

  /// An empty registry.
  package init() {}

  /// Spends one request of the service `key` when its allowance (made by `make` on first
  /// use) has one now.
  package func permit(_ key: String, make: (Double) -> ServiceAllowance) -> Bool {
    let now = monotonicSeconds()
    return allowances.withLock { allowances in
      allowances[key, default: make(now)].permit(now: now)
    }
  }

  /// The service `key` refused now, asking for `retryAfter` seconds, if anything.
  package func refused(
    _ key: String, retryAfter: TimeInterval?, make: (Double) -> ServiceAllowance
  ) {
    let now = monotonicSeconds()
    allowances.withLock { allowances in
      allowances[key, default: make(now)].refused(now: now, retryAfter: retryAfter)
    }
  }
}
