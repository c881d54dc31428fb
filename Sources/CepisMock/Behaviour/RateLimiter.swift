import Foundation

/// The arithmetic of one route's ``MockRateLimit``: the bucket's tokens and the block's window,
/// driven by the arrival times it is given (seconds on a monotonic clock), so that it is tested
/// without sleeping.
struct RateLimiter {
  /// What the limiter decided for one request.
  enum Decision: Equatable {
    /// The request goes on to be answered (and takes a token, if the limit has a bucket).
    case accepted
    /// The bucket was empty: 429; it holds a token again in `wait` seconds.
    case rateLimited(wait: Double)
    /// The route is blocked: 403, for `remaining` more seconds.
    case blocked(remaining: Double)
  }

  /// Float slack: a token due at exactly this instant counts as there.
  private static let slack = 1e-9

  /// The limit being enforced.
  let limit: MockRateLimit
  /// The bucket's tokens as of ``lastRefill``.
  private var tokens: Double
  /// When ``tokens`` was last brought up to date, or `nil` before the first request.
  private var lastRefill: Double?
  /// The arrivals the block counts, oldest first, from ``windowStart`` on (the ones before it
  /// have slid out of the window and wait to be compacted away).
  private var window: [Double] = []
  private var windowStart = 0
  /// When the block in force ends, or `nil` when the route is not blocked.
  private var blockedUntil: Double?

  init(_ limit: MockRateLimit) {
    self.limit = limit
    tokens = Double(limit.tokenBucket?.burst ?? 0)
  }

  /// Decides for a request arriving at `now` (monotonic seconds, never earlier than the
  /// previous call's) and records it.
  mutating func admit(at now: Double) -> Decision {
    if let block = limit.block {
      if let until = blockedUntil {
        if now < until { return .blocked(remaining: until - now) }
        blockedUntil = nil
      }
      while windowStart < window.count && window[windowStart] <= now - block.within {
        windowStart += 1
      }
      if window.count - windowStart >= block.after {
        blockedUntil = now + block.duration
        window.removeAll(keepingCapacity: true)
        windowStart = 0
        return .blocked(remaining: block.duration)
      }
      if windowStart > 64 && windowStart * 2 > window.count {
        window.removeFirst(windowStart)
        windowStart = 0
      }
      window.append(now)
    }
    if let bucket = limit.tokenBucket {
      if let last = lastRefill {
        tokens = min(Double(bucket.burst), tokens + max(0, now - last) * bucket.perSecond)
      }
      lastRefill = now
      guard tokens >= 1 - Self.slack else {
        return .rateLimited(wait: (1 - tokens) / bucket.perSecond)
      }
      tokens = max(0, tokens - 1)
    }
    return .accepted
  }
}

extension MockRateLimit.RetryAfter {
  /// The `Retry-After` value for a refusal whose next token is `wait` seconds away, the wall
  /// clock reading `now`.
  func headerValue(wait: Double, now: Date) -> String {
    switch self {
    case .untilNextToken:
      return String(max(1, Int((wait - 1e-9).rounded(.up))))
    case .seconds(let seconds):
      return String(max(0, seconds))
    case .httpDate:
      // Rounded up: a client that waits until the named second finds a token.
      let instant = (now.timeIntervalSince1970 + wait).rounded(.up)
      return imfFixdate(Date(timeIntervalSince1970: instant))
    }
  }
}

/// A refusal by a route's rate limit, and its answer.
enum RateRefusal: Equatable {
  /// 429 with this `Retry-After` value.
  case rateLimited(retryAfter: String)
  /// 403 with the blocked page.
  case blocked

  /// The answer: 429 is what ``MockFault/status(_:retryAfter:body:)`` writes on the route
  /// (the API's JSON error shape); 403 is a short HTML page, as ViaCEP sends.
  func response(route: MockRoute) -> Response {
    switch self {
    case .rateLimited(let retryAfter):
      var response = Response(status: 429, contentType: jsonType, body: .bytes([]))
      response.apply(.status(429, retryAfter: retryAfter), route: route)
      return response
    case .blocked:
      return Response(
        status: 403, contentType: htmlType, body: .bytes(Array(Self.blockedHTML.utf8)))
    }
  }

  /// The page of a blocked route.
  static let blockedHTML = """
    <!DOCTYPE html>
    <html><head><meta charset="utf-8"><title>403 Forbidden</title></head>
    <body><h1>Acesso bloqueado</h1>
    <p>Muitas requisições em pouco tempo. Tente novamente mais tarde.</p>
    </body></html>

    """
}

/// `date` as an IMF-fixdate (RFC 9110, section 5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`, the
/// fraction of a second dropped. Written by hand: it needs no formatter, locale or lock.
func imfFixdate(_ date: Date) -> String {
  let total = Int64(date.timeIntervalSince1970.rounded(.down))
  let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
  let secondOfDay = total - days * 86_400
  // The civil date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
  let shifted = days + 719_468
  let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
  let dayOfEra = shifted - era * 146_097
  let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
  let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
  let monthIndex = (5 * dayOfYear + 2) / 153
  let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
  let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
  let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  // 1970-01-01 was a Thursday.
  let weekday = ((days % 7) + 7 + 4) % 7
  let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  let months = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
  ]
  func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
  var yearText = String(year)
  while yearText.count < 4 { yearText = "0" + yearText }
  return "\(weekdays[Int(weekday)]), \(two(day)) \(months[Int(month - 1)]) \(yearText) "
    + "\(two(secondOfDay / 3_600)):\(two(secondOfDay % 3_600 / 60)):\(two(secondOfDay % 60)) GMT"
}

/// Seconds on a monotonic clock, for the rate limits (never affected by wall-clock changes).
/// CepisMock keeps its own: it must not import the clients' `CepisHTTP`.
func monotonicSeconds() -> Double {
  Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
}
