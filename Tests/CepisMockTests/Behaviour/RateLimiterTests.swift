import BrazilianDocuments
import Foundation
import Testing

@testable import CepisMock

extension MockTests {
  /// The rate limits' arithmetic, on an injected clock: no sleeping.
  @Suite struct RateLimiterTests {
    @Test func bucketPassesItsBurstThenRefusesUntilTheNextToken() {
      var limiter = RateLimiter(.tokenBucket(perSecond: 2, burst: 2))
      #expect(limiter.admit(at: 0) == .accepted)
      #expect(limiter.admit(at: 0) == .accepted)
      #expect(limiter.admit(at: 0) == .rateLimited(wait: 0.5))
      #expect(limiter.admit(at: 0.25) == .rateLimited(wait: 0.25))
      #expect(limiter.admit(at: 0.5) == .accepted)
      #expect(limiter.admit(at: 0.5) == .rateLimited(wait: 0.5))
      // A quiet spell refills the bucket up to its burst, no further.
      #expect(limiter.admit(at: 100) == .accepted)
      #expect(limiter.admit(at: 100) == .accepted)
      #expect(limiter.admit(at: 100) == .rateLimited(wait: 0.5))
    }

    @Test func refusalsTakeNoToken() {
      var limiter = RateLimiter(.tokenBucket(perSecond: 1, burst: 1))
      #expect(limiter.admit(at: 0) == .accepted)
      for step in 1...9 {
        #expect(limiter.admit(at: Double(step) / 10) != .accepted)
      }
      #expect(limiter.admit(at: 1) == .accepted)
    }

    @Test func fractionalRate() {
      var limiter = RateLimiter(.tokenBucket(perSecond: 0.5, burst: 1))
      #expect(limiter.admit(at: 10) == .accepted)
      #expect(limiter.admit(at: 11) == .rateLimited(wait: 1))
      #expect(limiter.admit(at: 11.999) != .accepted)
      #expect(limiter.admit(at: 12) == .accepted)
    }

    @Test func blockAfterNWithinTheWindowForTheDuration() {
      let epsilon = 0.001
      var limiter = RateLimiter(.block(after: 3, within: 10, for: 5))
      #expect(limiter.admit(at: 0) == .accepted)
      #expect(limiter.admit(at: 4) == .accepted)
      #expect(limiter.admit(at: 9) == .accepted)
      // The 4th within 10 s starts the block.
      #expect(limiter.admit(at: 9.5) == .blocked(remaining: 5))
      // Blocked requests neither count nor extend the block.
      #expect(limiter.admit(at: 12) == .blocked(remaining: 2.5))
      #expect(limiter.admit(at: 14.5 - epsilon) != .accepted)
      #expect(limiter.admit(at: 14.5 + epsilon) == .accepted)
      // The window starts empty when the block ends: three more pass.
      #expect(limiter.admit(at: 14.6) == .accepted)
      #expect(limiter.admit(at: 14.7) == .accepted)
      #expect(limiter.admit(at: 14.8) != .accepted)
    }

    @Test func blockWindowSlides() {
      var limiter = RateLimiter(.block(after: 2, within: 10, for: 60))
      #expect(limiter.admit(at: 0) == .accepted)
      #expect(limiter.admit(at: 6) == .accepted)
      // The request at 0 has left the window by 10: one counted, so this one passes.
      #expect(limiter.admit(at: 10) == .accepted)
      // 6 and 10 are within (5, 15]: this one is too many.
      #expect(limiter.admit(at: 15) == .blocked(remaining: 60))
    }

    @Test func blockIsCheckedBeforeTheBucketAndCountsItsRefusals() {
      let limit = MockRateLimit.block(after: 3, within: 60, for: 30)
        .combined(with: .tokenBucket(perSecond: 1, burst: 1))
      var limiter = RateLimiter(limit)
      #expect(limiter.admit(at: 0) == .accepted)
      #expect(limiter.admit(at: 0.1) == .rateLimited(wait: 0.9))
      #expect(limiter.admit(at: 0.2) == .rateLimited(wait: 0.8))
      // The 429s counted toward the block: the 4th request is blocked, full bucket or not.
      #expect(limiter.admit(at: 5) == .blocked(remaining: 30))
      #expect(limiter.admit(at: 34) == .blocked(remaining: 1))
      #expect(limiter.admit(at: 35) == .accepted)
    }

    @Test func combinedKeepsWhatTheOtherLeavesOut() {
      let bucket = MockRateLimit.tokenBucket(perSecond: 5, burst: 5)
      let block = MockRateLimit.block(after: 10, within: 60, for: 60)
      let both = bucket.combined(with: block)
      #expect(both.tokenBucket == bucket.tokenBucket)
      #expect(both.block == block.block)
      let replaced = both.combined(with: .tokenBucket(perSecond: 1, burst: 1))
      #expect(replaced.tokenBucket?.perSecond == 1)
      #expect(replaced.block == block.block)
      #expect(MockRateLimit().isEmpty)
      #expect(!both.isEmpty)
    }

    /// The bucket against another formulation of the same limit, the generic cell rate
    /// algorithm (a theoretical arrival time instead of tokens), over seeded random arrivals.
    /// Arrivals on a 1/1024 s grid and rates that are powers of two keep the arithmetic of
    /// both exact, so their decisions must agree to the last bit.
    @Test(arguments: [0.5, 1, 2, 8, 64] as [Double], [1, 2, 5] as [Int])
    func bucketAgreesWithTheCellRateAlgorithm(perSecond: Double, burst: Int) {
      var generator = SplitMix64(state: UInt64(perSecond * 1_000) &+ UInt64(burst))
      var limiter = RateLimiter(.tokenBucket(perSecond: perSecond, burst: burst))
      let interval = 1 / perSecond
      let tolerance = Double(burst - 1) * interval
      var theoreticalArrival = -Double.infinity
      var now = 0.0
      for _ in 0..<5_000 {
        now += Double(generator.next() % 2_048) / 1_024 * interval / 2
        let earliest = theoreticalArrival - tolerance
        let expected: RateLimiter.Decision
        if now < earliest {
          expected = .rateLimited(wait: earliest - now)
        } else {
          expected = .accepted
          theoreticalArrival = max(theoreticalArrival, now) + interval
        }
        let decision = limiter.admit(at: now)
        #expect(decision == expected, "at \(now)")
        if decision != expected { return }
      }
    }

    /// The block against a list of every counted arrival, over seeded random arrivals.
    @Test(arguments: [1, 3, 20] as [Int])
    func blockAgreesWithAListOfArrivals(after: Int) {
      var generator = SplitMix64(state: UInt64(after))
      let within = 10.0
      let duration = 7.0
      var limiter = RateLimiter(.block(after: after, within: within, for: duration))
      var counted: [Double] = []
      var blockedUntil = -Double.infinity
      var now = 0.0
      var blocks = 0
      for _ in 0..<20_000 {
        now += Double(generator.next() % 2_048) / 1_024 * within / Double(after)
        let expected: RateLimiter.Decision
        if now < blockedUntil {
          expected = .blocked(remaining: blockedUntil - now)
        } else if counted.filter({ $0 > now - within }).count >= after {
          blockedUntil = now + duration
          counted.removeAll()
          blocks += 1
          expected = .blocked(remaining: duration)
        } else {
          counted.append(now)
          expected = .accepted
        }
        let decision = limiter.admit(at: now)
        #expect(decision == expected, "at \(now)")
        if decision != expected { return }
      }
      // The arrivals were dense enough to block, and sparse enough to pass in between.
      #expect(blocks > 10)
    }

    @Test func retryAfterHeaderValues() {
      let now = Date(timeIntervalSince1970: 1_000_000_000.25)
      #expect(MockRateLimit.RetryAfter.untilNextToken.headerValue(wait: 0.5, now: now) == "1")
      #expect(MockRateLimit.RetryAfter.untilNextToken.headerValue(wait: 0.001, now: now) == "1")
      #expect(MockRateLimit.RetryAfter.untilNextToken.headerValue(wait: 1, now: now) == "1")
      #expect(MockRateLimit.RetryAfter.untilNextToken.headerValue(wait: 1.01, now: now) == "2")
      #expect(MockRateLimit.RetryAfter.untilNextToken.headerValue(wait: 59.5, now: now) == "60")
      #expect(MockRateLimit.RetryAfter.seconds(7).headerValue(wait: 0.5, now: now) == "7")
      #expect(MockRateLimit.RetryAfter.seconds(0).headerValue(wait: 0.5, now: now) == "0")
      // 1_000_000_000.25 + 2.5 = 1_000_000_002.75, rounded up to the next whole second.
      let date = MockRateLimit.RetryAfter.httpDate.headerValue(wait: 2.5, now: now)
      #expect(date == "Sun, 09 Sep 2001 01:46:43 GMT")
      #expect(parseIMFFixdate(date) == Date(timeIntervalSince1970: 1_000_000_003))
    }

    /// The hand-written IMF-fixdate against Foundation's formatter, over seeded instants from
    /// 1970 to 2200 (leap years, century rules, every weekday).
    @Test func imfFixdateMatchesFoundation() throws {
      #expect(imfFixdate(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
      #expect(
        imfFixdate(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
      #expect(
        imfFixdate(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 GMT")
      var generator = SplitMix64(state: 49)
      for _ in 0..<2_000 {
        let seconds = Double(generator.next() % 7_258_118_400)
        let text = imfFixdate(Date(timeIntervalSince1970: seconds + 0.75))
        let parsed = try #require(parseIMFFixdate(text), "\(text)")
        #expect(parsed.timeIntervalSince1970 == seconds, "\(text)")
      }
    }
  }
}

/// An IMF-fixdate read back by Foundation (the reference the mock's writer is held to).
func parseIMFFixdate(_ text: String) -> Date? {
  let formatter = DateFormatter()
  formatter.locale = Locale(identifier: "en_US_POSIX")
  formatter.timeZone = TimeZone(identifier: "GMT")
  formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
  guard let date = formatter.date(from: text), formatter.string(from: date) == text else {
    return nil
  }
  return date
}
