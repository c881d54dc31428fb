import Foundation
import Testing

@testable import CepisHTTP

@Suite("Full-jitter backoff")
struct RetryPolicyTests {
  let policy = RetryPolicy(
    maxAttempts: 5, backoffBase: 0.5, backoffMax: 8, attemptTimeout: 10, totalTimeout: nil)

  @Test(
    "the window doubles from backoffBase and stops at backoffMax",
    arguments: [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 8.0), (40, 8.0)])
  func windowDoubles(retry: Int, window: Double) {
    // A draw just below 1 lands at the top of the window, 0 at its bottom.
    #expect(policy.jitteredBackoff(retry: retry, unitRandom: 0) == 0)
    let top = policy.jitteredBackoff(retry: retry, unitRandom: 0.999_999)
    #expect(top <= window)
    #expect(top > window * 0.999)
    #expect(abs(policy.jitteredBackoff(retry: retry, unitRandom: 0.5) - window / 2) < 1e-9)
  }

  @Test("a Retry-After replaces the draw and is capped at backoffMax")
  func retryAfterReplacesDraw() {
    #expect(policy.delay(retry: 1, retryAfter: 2, unitRandom: 0.9) == 2)
    #expect(policy.delay(retry: 1, retryAfter: 3_600, unitRandom: 0.9) == 8)
    #expect(policy.delay(retry: 1, retryAfter: -5, unitRandom: 0.9) == 0)
    #expect(policy.delay(retry: 2, retryAfter: nil, unitRandom: 0.25) == 0.25)
  }

  @Test("out-of-range random draws cannot widen the window")
  func clampsRandom() {
    #expect(policy.jitteredBackoff(retry: 1, unitRandom: 7) == 0.5)
    #expect(policy.jitteredBackoff(retry: 1, unitRandom: -1) == 0)
    #expect(policy.jitteredBackoff(retry: 1, unitRandom: .nan) == 0)
  }

  @Test("nonsensical settings are clamped")
  func clampsSettings() {
    let odd = RetryPolicy(
      maxAttempts: 0, backoffBase: -1, backoffMax: .infinity, attemptTimeout: 0, totalTimeout: -3)
    #expect(odd.maxAttempts == 1)
    #expect(odd.backoffBase == 0)
    #expect(odd.backoffMax == 0)
    #expect(odd.attemptTimeout > 0)
    #expect(odd.totalTimeout ?? 0 > 0)
  }

  @Test("exactly 429, 500, 502, 503 and 504 are retried")
  func retriableStatuses() {
    let retried = (100...599).filter(RetryPolicy.isRetriableStatus)
    #expect(retried == [429, 500, 502, 503, 504])
  }
}

@Suite("Retry-After parsing")
struct RetryAfterTests {
  // 1994-11-06T08:49:37Z, the RFC's own example instant.
  let example = Date(timeIntervalSince1970: 784_111_777)

  @Test("delta-seconds")
  func deltaSeconds() {
    #expect(RetryAfter.seconds(from: "120", now: example) == 120)
    #expect(RetryAfter.seconds(from: " 0 ", now: example) == 0)
    #expect(RetryAfter.seconds(from: "99999999999999999999", now: example) == 86_400)
  }

  @Test(
    "the three HTTP-date forms of RFC 9110 §5.6.7",
    arguments: [
      "Sun, 06 Nov 1994 08:50:07 GMT",  // IMF-fixdate
      "Sunday, 06-Nov-94 08:50:07 GMT",  // obsolete RFC 850
      "Sun Nov  6 08:50:07 1994",  // asctime
    ])
  func httpDates(value: String) {
    #expect(RetryAfter.seconds(from: value, now: example) == 30)
  }

  @Test("a date in the past means no wait")
  func pastDate() {
    #expect(RetryAfter.seconds(from: "Sat, 05 Nov 1994 08:49:37 GMT", now: example) == 0)
  }

  @Test("RFC 850 two-digit years more than 50 years ahead belong to the past century")
  func twoDigitYears() throws {
    let now = Date(timeIntervalSince1970: 1_795_000_000)  // late 2026
    let date = try #require(RetryAfter.httpDate("Monday, 01-Jan-77 00:00:00 GMT", now: now))
    #expect(date == Date(timeIntervalSince1970: 220_924_800))  // 1977, not 2077
  }

  @Test(
    "garbage is not a Retry-After",
    arguments: [
      "", "soon", "-5", "1.5", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
      "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 PST",
      "Sun, 29 Feb 1995 08:49:37 GMT", String(repeating: "9", count: 500),
    ])
  func garbage(value: String) {
    #expect(RetryAfter.seconds(from: value, now: example) == nil)
  }
}

@Suite("Retry budget")
struct RetryBudgetTests {
  @Test("retries drain the bucket and it refuses when it cannot pay")
  func drains() {
    let budget = RetryTokenBucket(
      .init(capacity: 20, retryCost: 5, timeoutRetryCost: 10, successRefund: 1))
    #expect(budget.acquireRetry(afterTimeout: false) == 5)
    #expect(budget.acquireRetry(afterTimeout: true) == 10)
    #expect(budget.acquireRetry(afterTimeout: false) == 5)
    #expect(budget.available == 0)
    #expect(budget.acquireRetry(afterTimeout: false) == nil)
  }

  @Test("first-time successes refill by one, retried successes return what they spent")
  func refills() {
    let budget = RetryTokenBucket(
      .init(capacity: 10, retryCost: 5, timeoutRetryCost: 10, successRefund: 1))
    _ = budget.acquireRetry(afterTimeout: false)
    _ = budget.acquireRetry(afterTimeout: false)
    #expect(budget.available == 0)
    budget.recordSuccess(spent: 0)
    #expect(budget.available == 1)
    budget.recordSuccess(spent: 5)
    #expect(budget.available == 6)
    for _ in 0..<100 { budget.recordSuccess(spent: 0) }
    #expect(budget.available == 10)
  }
}

@Suite("Response helpers")
struct HTTPResponseTests {
  @Test("content types and HTML sniffing")
  func contentTypes() {
    let json = HTTPResponse(
      status: 200, headers: ["content-type": "Application/JSON; charset=utf-8"],
      body: Data("{}".utf8))
    #expect(json.isJSON)
    #expect(json.mediaType == "application/json")
    let portal = HTTPResponse(
      status: 200, headers: ["content-type": "text/plain"], body: Data("\n  <html><body>".utf8))
    #expect(portal.looksLikeHTML)
    #expect(!json.looksLikeHTML)
  }

  @Test("previews are short, single-line and free of control characters")
  func previews() {
    let body = Data(("<html>\r\n\u{1B}[31m" + String(repeating: "x", count: 5_000)).utf8)
    let preview = HTTPResponse.preview(of: body, limit: 40)
    #expect(preview.count <= 41)
    #expect(!preview.contains("\n"))
    #expect(!preview.contains("\u{1B}"))
    #expect(preview.hasSuffix("…"))
  }
}

@Suite("Content-Length parsing")
struct ContentLengthTests {
  @Test("digits with optional surrounding spaces; anything else is no length")
  func parsing() {
    #expect(contentLength("1234") == 1234)
    #expect(contentLength(" 42\t") == 42)
    #expect(contentLength("0") == 0)
    for bad in ["", " ", "-1", "1 2", "12a", "0x10", "+5", "1234567890123456789"] {
      #expect(contentLength(bad) == nil, "\(bad)")
    }
  }
}
