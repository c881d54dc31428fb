import CepisSupport
import Foundation

/// A client-wide limit on retrying, so that an outage does not turn into a retry storm.
///
/// A client (`Client` or `CPFClient`) keeps a bucket of tokens shared by all its calls, as the
/// AWS SDKs' standard retry mode does: each retry spends ``retryCost`` tokens
/// (``timeoutRetryCost`` after a timeout), a call that succeeds first time returns
/// ``successRefund``, one that succeeds after retries returns what its retries spent. When the
/// bucket cannot pay for a retry, the call fails at once with its last error instead of
/// retrying. With the standard numbers a client can absorb about 100 retries in a row before it
/// stops retrying, and it recovers as calls succeed again.
///
/// A budget is a value: each client made with it gets a bucket of its own, so one client's
/// outage never stops another's retries.
///
/// ```swift
/// let client = Client(retryBudget: .init(capacity: 100, retryCost: 5))
/// let unlimited = CPFClient(retryBudget: nil)
/// ```
public struct RetryBudget: Sendable, Hashable {
  /// The bucket's size and initial content.
  public var capacity: Int
  /// Tokens a retry costs after an error response or a network failure.
  public var retryCost: Int
  /// Tokens a retry costs after a timeout (timeouts suggest a struggling server).
  public var timeoutRetryCost: Int
  /// Tokens a first-time success returns.
  public var successRefund: Int

  /// 500 tokens, 5 a retry, 10 a retry after a timeout, 1 back per first-time success.
  public static let standard = RetryBudget(
    capacity: 500, retryCost: 5, timeoutRetryCost: 10, successRefund: 1)

  /// Creates a budget; negative numbers count as zero.
  public init(capacity: Int, retryCost: Int, timeoutRetryCost: Int = 10, successRefund: Int = 1) {
    self.capacity = max(0, capacity)
    self.retryCost = max(0, retryCost)
    self.timeoutRetryCost = max(0, timeoutRetryCost)
    self.successRefund = max(0, successRefund)
  }
}

/// The token bucket of one client, filled to a ``RetryBudget``'s numbers.
///
/// Modelled on the AWS SDKs' "standard" retry mode: every retry spends tokens, a success
/// that needed no retry earns one back, a success after retries returns what those retries
/// spent. When the bucket cannot pay for a retry, the call fails at once with its last error,
/// so a fleet of clients does not multiply the load on an API that is already down.
package final class RetryTokenBucket: Sendable {
  /// The numbers this bucket was made with.
  package let budget: RetryBudget
  private let tokens: LockedValue<Int>

  /// Creates a full bucket.
  package init(_ budget: RetryBudget = .standard) {
    self.budget = budget
    self.tokens = LockedValue(budget.capacity)
  }

  /// The tokens left now.
  var available: Int { tokens.withLock { $0 } }

  /// Takes the cost of one retry, or returns `nil` when the bucket cannot pay for it.
  func acquireRetry(afterTimeout: Bool) -> Int? {
    let cost = afterTimeout ? budget.timeoutRetryCost : budget.retryCost
    return tokens.withLock { value in
      guard value >= cost else { return nil }
      value -= cost
      return cost
    }
  }

  /// Records a success: `spent` is what this call's retries took from the bucket.
  func recordSuccess(spent: Int) {
    let refund = spent > 0 ? spent : budget.successRefund
    tokens.withLock { value in
      value = min(budget.capacity, value + refund)
    }
  }
}
