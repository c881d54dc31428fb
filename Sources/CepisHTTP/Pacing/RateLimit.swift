import CepisSupport
import Foundation

/// A rate a client keeps to on its own, for users who know their quota: requests are spaced
/// so that no more than ``requestsPerSecond`` go out on average, with at most ``burst`` at once
/// after a quiet spell (a token bucket).
///
/// A rate limit is shared by every call of the client it is given to, and by every client
/// built with the same limit on the same ``Transport`` value (copies of a value are the same
/// value; ``Transport/default`` is one value for the whole process):
///
/// ```swift
/// let client = Client(rateLimit: .perSecond(5))
/// let sameQuota = Client(timeout: 2, rateLimit: .perSecond(5))  // shares client's bucket
/// ```
///
/// Every attempt waits for its turn, retries included; a call whose turn would come after its
/// `totalTimeout` fails at once with `rateLimited` instead of waiting in vain. Fallbacks are
/// not counted: they have budgets of their own (`FallbackBudget`).
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
  /// Requests allowed per second, on average (at least one an hour).
  public let requestsPerSecond: Double
  /// The most requests sent at once after a quiet spell (at least 1).
  public let burst: Int

  /// The smallest rate: one request an hour.
  package static let slowest = 1.0 / 3_600

  private init(requestsPerSecond: Double, burst: Int?) {
    let rate =
      requestsPerSecond.isFinite ? max(Self.slowest, requestsPerSecond) : Self.slowest
    self.requestsPerSecond = rate
    // By default, one second's worth of requests (at least one) may go at once.
    self.burst = max(1, burst ?? Int(rate.rounded(.down)))
  }

  /// `count` requests a second on average; `burst` at once after a quiet spell (default: one
  /// second's worth, at least 1). Rates below one an hour count as one an hour.
  public static func perSecond(_ count: Double, burst: Int? = nil) -> RateLimit {
    RateLimit(requestsPerSecond: count, burst: burst)
  }

  /// `count` requests a minute on average; `burst` at once after a quiet spell (default: 1).
  public static func perMinute(_ count: Double, burst: Int? = nil) -> RateLimit {
    RateLimit(requestsPerSecond: count / 60, burst: burst ?? 1)
  }

  /// `5/s (burst 5)`, or `30/min (burst 1)` for rates under one a second.
  public var description: String {
    if requestsPerSecond >= 1 {
      return "\(Self.format(requestsPerSecond))/s (burst \(burst))"
    }
    return "\(Self.format(requestsPerSecond * 60))/min (burst \(burst))"
  }

  private static func format(_ value: Double) -> String {
    value == value.rounded() && value < 1e15
      ? String(Int(value)) : String(format: "%.3g", value)
  }
}

/// A token bucket's arithmetic, on a clock the caller passes in (seconds on any monotonic
/// scale): `rate` tokens a second, at most `capacity` kept.
///
/// ``reserve(now:)`` hands out the next token even when there is none yet, and says how long
/// to wait for it: the bucket goes into debt, so that callers waiting together are served one
/// after the other at the rate, in the order they reserved.
package struct TokenBucket: Sendable, Equatable {
  /// Tokens added per second.
  package let rate: Double
  /// The most tokens kept.
  package let capacity: Double
  /// Tokens held at ``updatedAt`` (negative: reserved ahead).
  package private(set) var tokens: Double
  /// When ``tokens`` was last brought up to date.
  package private(set) var updatedAt: Double

  /// A full bucket at `now`.
  package init(rate: Double, capacity: Double, now: Double) {
    self.rate = rate
    self.capacity = max(1, capacity)
    self.tokens = max(1, capacity)
    self.updatedAt = now
  }

  private mutating func refill(now: Double) {
    guard now > updatedAt else { return }
    tokens = min(capacity, tokens + (now - updatedAt) * rate)
    updatedAt = now
  }

  /// Takes a token when one is there at `now`; `false` (nothing taken) otherwise.
  package mutating func take(now: Double) -> Bool {
    refill(now: now)
    guard tokens >= 1 else { return false }
    tokens -= 1
    return true
  }

  /// Reserves the next token: the seconds from `now` until it is there (0 when it is now).
  package mutating func reserve(now: Double) -> TimeInterval {
    refill(now: now)
    tokens -= 1
    return tokens >= 0 ? 0 : -tokens / rate
  }

  /// Returns a reserved token that was not used.
  package mutating func giveBack() {
    tokens = min(capacity, tokens + 1)
  }
}

/// The bucket of one ``RateLimit``, shared by the calls and clients that use it.
package final class RequestPacer: Sendable {
  /// The limit this pacer keeps.
  package let limit: RateLimit
  private let bucket: LockedValue<TokenBucket>

  /// A pacer with a full bucket.
  package init(_ limit: RateLimit) {
    self.limit = limit
    self.bucket = LockedValue(
      TokenBucket(
        rate: limit.requestsPerSecond, capacity: Double(limit.burst), now: monotonicSeconds()))
  }

  /// Waits for the next turn. Throws ``HTTPFailure/rateLimitedLocally(message:retryAfter:)``
  /// at once when the turn would come after `deadline` (a ``monotonicSeconds()`` instant), and
  /// `CancellationError` when the task is cancelled; neither spends a turn.
  package func acquire(
    deadline: TimeInterval?, sleep: @Sendable (TimeInterval) async throws -> Void
  ) async throws {
    let now = monotonicSeconds()
    let wait = bucket.withLock { $0.reserve(now: now) }
    guard wait > 0 else { return }
    if let deadline, now + wait > deadline {
      bucket.withLock { $0.giveBack() }
      throw HTTPFailure.rateLimitedLocally(
        message: "the client's rate limit (\(limit)) has no turn before the deadline",
        retryAfter: wait)
    }
    CallScope.current?.record(.paced(seconds: wait))
    do {
      try await sleep(wait)
    } catch {
      bucket.withLock { $0.giveBack() }
      throw error
    }
  }
}

/// The pacers of one ``Transport`` value, one per ``RateLimit``: clients built with the same
/// limit on the same transport share one bucket.
package final class PacerRegistry: Sendable {
  private let pacers = LockedValue<[RateLimit: RequestPacer]>([:])

  /// An empty registry.
  package init() {}

  /// The pacer of `limit`, made on first use.
  package func pacer(for limit: RateLimit) -> RequestPacer {
    pacers.withLock { pacers in
      if let pacer = pacers[limit] { return pacer }
      let pacer = RequestPacer(limit)
      pacers[limit] = pacer
      return pacer
    }
  }
}
