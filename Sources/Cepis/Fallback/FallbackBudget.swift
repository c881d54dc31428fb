import CepisHTTP
import Foundation

/// How often Cepis may ask a public fallback, so that an outage of cep.is never gets the
/// caller's address blocked by the service that stands in.
///
/// ViaCEP and BrasilAPI are free services that block heavy users: ViaCEP has blocked an
/// address after about 550 requests in two hours, and BrasilAPI's maintainers speak of about
/// 100 requests a minute and say it is not meant for batches. So each fallback has a budget —
/// a token bucket of ``requestsPerMinute`` with room for ``burst`` — and, when the service
/// answers 429 or 403, a ``coolDown`` (or its `Retry-After`, when longer) during which it is
/// not asked at all. A fallback that may not be asked is skipped as if it had failed: the
/// lookup goes on with the next one, and when none is left it fails with cep.is's own error.
/// Hedging spends from the same budget.
///
/// A budget is kept by the ``Transport`` value, per service address: every `Client` built on
/// the same transport with the same fallback (service, base URL and budget) draws on one
/// bucket. ``Transport/default`` is one value for the whole process, so the clients on it —
/// the usual case, and a server that makes a client per request — cannot multiply it. Several
/// processes on one address each have their own.
///
/// ```swift
/// let client = Client(
///   fallbacks: [.viaCEP(), .brasilAPI(budget: .perMinute(60, burst: 20))])
/// ```
public struct FallbackBudget: Sendable, Hashable, CustomStringConvertible {
  /// Requests a minute on average.
  public let requestsPerMinute: Double
  /// The most requests at once after a quiet spell.
  public let burst: Int
  /// Seconds the service is not asked after it answered 429 or 403 (its `Retry-After`, when
  /// longer, wins).
  public let coolDown: TimeInterval

  /// `count` requests a minute on average, `burst` at once (default: a minute's worth, at
  /// least 1), and `coolDown` seconds without asking after a 429 or a 403 (default ten
  /// minutes). Rates below one an hour count as one an hour.
  public static func perMinute(
    _ count: Double, burst: Int? = nil, coolDown: TimeInterval = 600
  ) -> FallbackBudget {
    let rate = count.isFinite ? max(60 * RateLimit.slowest, count) : 60 * RateLimit.slowest
    return FallbackBudget(
      requestsPerMinute: rate, burst: max(1, burst ?? Int(rate.rounded(.down))),
      coolDown: coolDown.isFinite ? max(0, coolDown) : 600)
  }

  /// No limit and no cool-down: for a stand-in of your own (a CepisMock, a private mirror).
  public static let unlimited = FallbackBudget(
    requestsPerMinute: .infinity, burst: .max, coolDown: 0)

  /// ViaCEP's default: 3 a minute, 10 at once, ten minutes of cool-down. Over two hours that
  /// is at most 370 requests, two thirds of the ~550 after which ViaCEP has blocked an address.
  public static let viaCEPDefault = perMinute(3, burst: 10)

  /// BrasilAPI's default: 30 a minute, 30 at once, ten minutes of cool-down: at most 60 in
  /// the first minute, well under the ~100 a minute BrasilAPI's maintainers mention.
  public static let brasilAPIDefault = perMinute(30, burst: 30)

  private init(requestsPerMinute: Double, burst: Int, coolDown: TimeInterval) {
    self.requestsPerMinute = requestsPerMinute
    self.burst = burst
    self.coolDown = coolDown
  }

  /// Whether the budget limits anything.
  var isUnlimited: Bool { requestsPerMinute == .infinity }

  /// `3/min (burst 10, cool-down 600 s)`, or `unlimited`.
  public var description: String {
    if isUnlimited { return "unlimited" }
    let rate =
      requestsPerMinute == requestsPerMinute.rounded()
      ? String(Int(requestsPerMinute)) : String(format: "%.3g", requestsPerMinute)
    return "\(rate)/min (burst \(burst), cool-down \(Int(coolDown)) s)"
  }
}

extension Fallback {
  /// The key of this fallback's allowance in its transport's registry: the service, its
  /// address and its budget.
  var allowanceKey: String { "\(source.rawValue)|\(base)|\(budget)" }

  /// A full allowance of this fallback's budget at `now`.
  func allowance(now: Double) -> ServiceAllowance {
    ServiceAllowance(
      requestsPerSecond: budget.isUnlimited ? nil : budget.requestsPerMinute / 60,
      burst: budget.burst, coolDown: budget.coolDown, now: now)
  }
}
