import Foundation

/// A rate limit on one ``MockRoute``, as the real services enforce them: a token bucket that
/// answers 429 with `Retry-After`, a ViaCEP-like block that answers 403 with an HTML page, or
/// both.
///
/// ```swift
/// // 20 requests a second, 5 at once; past that, 429 with `Retry-After: 1`.
/// server.limitRate(.csv, .tokenBucket(perSecond: 20, burst: 5))
/// // The 4th request within 60 s blocks the route for 2 s (403, text/html).
/// server.limitRate(.viaCEP, .block(after: 3, within: 60, for: 2))
/// // Both on one route.
/// server.limitRate(
///   .viaCEP,
///   .block(after: 100, within: 60, for: 30).combined(with: .tokenBucket(perSecond: 5, burst: 5)))
/// ```
///
/// The limit stands in front of the route, as a service's gateway does: a request it refuses
/// takes no scripted fault, no chaos draw and no mode of the route (those apply to the
/// requests it lets through). With both parts set, the block is checked first: a blocked
/// request never reaches the bucket. A request the bucket refuses still counts toward the
/// block, so a client that keeps retrying through 429s ends up blocked.
///
/// Set one with ``MockServer/limitRate(_:_:)`` or ``MockServer/Configuration/rateLimits``;
/// count what it refused with ``MockServer/rateLimitedCount(on:)`` and
/// ``MockServer/blockedCount(on:)``.
public struct MockRateLimit: Sendable, Hashable {
  /// A token bucket: it holds at most `burst` tokens and gains `perSecond` tokens a second;
  /// a request takes one, and a request that finds none is answered 429.
  ///
  /// The bucket starts full. A refused request takes no token, so refusals do not push the
  /// next accepted request further away.
  public struct TokenBucket: Sendable, Hashable {
    /// Tokens gained per second (fractional allowed: `0.5` is one every two seconds).
    public var perSecond: Double
    /// The most tokens the bucket holds: how many requests pass at once after a quiet spell.
    public var burst: Int
    /// What the 429 answer's `Retry-After` header says.
    public var retryAfter: RetryAfter

    /// Creates a token bucket.
    ///
    /// - Precondition: `perSecond` is positive and finite, `burst` is at least 1.
    public init(perSecond: Double, burst: Int, retryAfter: RetryAfter = .untilNextToken) {
      precondition(perSecond > 0 && perSecond.isFinite, "perSecond must be positive and finite")
      precondition(burst >= 1, "burst must be at least 1")
      self.perSecond = perSecond
      self.burst = burst
      self.retryAfter = retryAfter
    }
  }

  /// The `Retry-After` header of a 429 answer (RFC 9110, section 10.2.3).
  public enum RetryAfter: Sendable, Hashable {
    /// The whole seconds until the bucket holds a token again, rounded up, at least 1
    /// (`Retry-After: 1`). A client that waits that long is accepted.
    case untilNextToken
    /// This many seconds, whatever the bucket holds (`Retry-After: 0` makes a client retry
    /// at once, to be refused again).
    case seconds(Int)
    /// The instant the bucket holds a token again, rounded up to the whole second, as an
    /// HTTP-date in IMF-fixdate form (`Retry-After: Sun, 06 Nov 1994 08:49:37 GMT`).
    case httpDate
  }

  /// A block as ViaCEP applies it: after `after` requests within a sliding window of
  /// `within` seconds, every request is answered 403 with an HTML page for `duration`
  /// seconds, then the route answers again.
  ///
  /// The window slides: a request is the one too many when `after` requests were already
  /// counted in the `within` seconds before it. That request starts the block (it is the first
  /// one answered 403). Requests answered 403 during the block neither count nor extend it, and
  /// the window starts empty when the block ends.
  public struct Block: Sendable, Hashable {
    /// How many requests pass within the window.
    public var after: Int
    /// The window, in seconds.
    public var within: TimeInterval
    /// How long the block lasts, in seconds.
    public var duration: TimeInterval

    /// Creates a block rule.
    ///
    /// - Precondition: `after` is at least 1, `within` and `duration` are positive and finite.
    public init(after: Int, within: TimeInterval, for duration: TimeInterval) {
      precondition(after >= 1, "after must be at least 1")
      precondition(within > 0 && within.isFinite, "within must be positive and finite")
      precondition(duration > 0 && duration.isFinite, "duration must be positive and finite")
      self.after = after
      self.within = within
      self.duration = duration
    }
  }

  /// The token bucket, or `nil` for none.
  public var tokenBucket: TokenBucket?
  /// The block rule, or `nil` for none.
  public var block: Block?

  /// Creates a limit from its parts; with neither, the limit lets every request through.
  public init(tokenBucket: TokenBucket? = nil, block: Block? = nil) {
    self.tokenBucket = tokenBucket
    self.block = block
  }

  /// A token-bucket limit (see ``TokenBucket``).
  ///
  /// - Precondition: `perSecond` is positive and finite, `burst` is at least 1.
  public static func tokenBucket(
    perSecond: Double, burst: Int, retryAfter: RetryAfter = .untilNextToken
  ) -> MockRateLimit {
    MockRateLimit(
      tokenBucket: TokenBucket(perSecond: perSecond, burst: burst, retryAfter: retryAfter))
  }

  /// A block limit (see ``Block``).
  ///
  /// - Precondition: `after` is at least 1, `within` and `duration` are positive and finite.
  public static func block(
    after: Int, within: TimeInterval, for duration: TimeInterval
  ) -> MockRateLimit {
    MockRateLimit(block: Block(after: after, within: within, for: duration))
  }

  /// This limit with the parts `other` sets: `other`'s bucket and block replace this one's,
  /// the parts `other` leaves `nil` are kept.
  public func combined(with other: MockRateLimit) -> MockRateLimit {
    MockRateLimit(tokenBucket: other.tokenBucket ?? tokenBucket, block: other.block ?? block)
  }

  /// Whether the limit has neither part, so that it refuses nothing.
  var isEmpty: Bool { tokenBucket == nil && block == nil }
}
