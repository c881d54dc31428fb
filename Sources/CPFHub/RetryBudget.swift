import CepisHTTP

extension CPFClient {
  /// A client-wide limit on retrying, so that an outage does not turn into a retry storm.
  ///
  /// A ``CPFClient`` keeps a bucket of tokens shared by all its calls, as the AWS SDKs'
  /// standard retry mode does: each retry spends ``retryCost`` tokens (``timeoutRetryCost``
  /// after a timeout), a call that succeeds first time returns ``successRefund``, one that
  /// succeeds after retries returns what its retries spent. When the bucket cannot pay for a
  /// retry, the call fails at once with its last error.
  ///
  /// ```swift
  /// let client = CPFClient(retryBudget: .init(capacity: 100, retryCost: 5))
  /// let unlimited = CPFClient(retryBudget: nil)
  /// ```
  public struct RetryBudget: Sendable, Hashable {
    /// The bucket's size and initial content.
    public var capacity: Int
    /// Tokens a retry costs after an error response or a network failure.
    public var retryCost: Int
    /// Tokens a retry costs after a timeout.
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

    var core: CepisHTTP.RetryBudget.Configuration {
      .init(
        capacity: capacity, retryCost: retryCost, timeoutRetryCost: timeoutRetryCost,
        successRefund: successRefund)
    }
  }
}
