import Foundation

/// A client-wide token bucket that caps how much retrying one client may do.
///
/// Modelled on the AWS SDKs' "standard" retry mode: every retry spends tokens, a success
/// that needed no retry earns one back, a success after retries returns what those retries
/// spent. When the bucket cannot pay for a retry, the call fails at once with its last error,
/// so a fleet of clients does not multiply the load on an API that is already down.
package final class RetryBudget: Sendable {
  /// The sizes of the bucket and of each charge.
  package struct Configuration: Sendable, Equatable {
    /// The bucket's size, and its content when the client is created.
    package var capacity: Int
    /// What a retry after an error response or a network failure costs.
    package var retryCost: Int
    /// What a retry after a timeout costs (timeouts suggest a struggling server).
    package var timeoutRetryCost: Int
    /// What a success on the first attempt returns to the bucket.
    package var successRefund: Int

    /// The AWS SDKs' standard numbers: 500 tokens, 5 a retry, 10 after a timeout, 1 back.
    package static let standard = Configuration(
      capacity: 500, retryCost: 5, timeoutRetryCost: 10, successRefund: 1)

    /// Creates a configuration.
    package init(capacity: Int, retryCost: Int, timeoutRetryCost: Int, successRefund: Int) {
      self.capacity = max(0, capacity)
      self.retryCost = max(0, retryCost)
      self.timeoutRetryCost = max(0, timeoutRetryCost)
      self.successRefund = max(0, successRefund)
    }
  }

  /// The numbers this bucket was made with.
  package let configuration: Configuration
  private let tokens: LockedValue<Int>

  /// Creates a full bucket.
  package init(_ configuration: Configuration = .standard) {
    self.configuration = configuration
    self.tokens = LockedValue(configuration.capacity)
  }

  /// The tokens left now.
  package var available: Int { tokens.withLock { $0 } }

  /// Takes the cost of one retry, or returns `nil` when the bucket cannot pay for it.
  package func acquireRetry(afterTimeout: Bool) -> Int? {
    let cost = afterTimeout ? configuration.timeoutRetryCost : configuration.retryCost
    return tokens.withLock { value in
      guard value >= cost else { return nil }
      value -= cost
      return cost
    }
  }

  /// Records a success: `spent` is what this call's retries took from the bucket.
  package func recordSuccess(spent: Int) {
    let refund = spent > 0 ? spent : configuration.successRefund
    tokens.withLock { value in
      value = min(configuration.capacity, value + refund)
    }
  }
}
