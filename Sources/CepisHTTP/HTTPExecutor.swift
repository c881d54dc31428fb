import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The request → attempts → deadline → outcome loop both API clients share.
///
/// What it guarantees, on Linux as on Apple platforms:
/// - each attempt has its own deadline (`attemptTimeout`, sub-second values honoured), cut
///   short by what is left of `totalTimeout`; when it expires the attempt ends at once. Neither
///   deadline is left to `URLSession`, whose Linux implementation truncates timeouts to
///   whole seconds, restarts its idle timer on every byte and has no resource timeout;
/// - 429, 500, 502, 503, 504 and network failures are retried, at most `maxAttempts`
///   attempts in all, after a full-jitter backoff or the server's `Retry-After` (capped);
/// - every other response is returned as it is, for the client module to interpret;
/// - cancelling the calling task ends the call promptly with `CancellationError`;
/// - a client-wide ``RetryBudget`` stops retries when too many have failed recently.
package struct HTTPExecutor: Sendable {
  /// The retry and deadline settings.
  package let policy: RetryPolicy
  /// The transport that performs single attempts.
  package let transport: HTTPTransport
  /// The client-wide retry budget, or `nil` for none.
  package let budget: RetryBudget?
  /// Clock, sleeper and random source.
  package let environment: HTTPEnvironment

  /// Creates an executor.
  package init(
    policy: RetryPolicy,
    transport: HTTPTransport,
    budget: RetryBudget?,
    environment: HTTPEnvironment = .live
  ) {
    self.policy = policy
    self.transport = transport
    self.budget = budget
    self.environment = environment
  }

  /// Runs `request` to completion.
  ///
  /// - Parameter isFinal: a response that must be returned as it is even though its status
  ///   is normally retried (a `/health` answering 503 with a valid body, say).
  /// - Returns: the first response whose status is not retried.
  /// - Throws: ``HTTPFailure`` after the last attempt, or `CancellationError`.
  package func perform(
    _ request: URLRequest,
    isFinal: @Sendable (HTTPResponse) -> Bool = { _ in false }
  ) async throws -> HTTPResponse {
    // `ContinuousClock` needs macOS 13; a monotonic uptime works everywhere we ship.
    let deadline = policy.totalTimeout.map { monotonicSeconds() + $0 }
    var spent = 0
    var attempt = 0
    while true {
      attempt += 1
      try Task.checkCancellation()
      let failure: HTTPFailure
      let wasTimeout: Bool
      var retryAfter: TimeInterval?

      let attemptLimit: TimeInterval
      var limitedByTotal = false
      if let deadline {
        let remaining = deadline - monotonicSeconds()
        guard remaining > 0 else {
          throw HTTPFailure.timedOut("total timeout of \(Self.format(policy.totalTimeout)) expired")
        }
        attemptLimit = min(policy.attemptTimeout, remaining)
        limitedByTotal = remaining < policy.attemptTimeout
      } else {
        attemptLimit = policy.attemptTimeout
      }

      do {
        let response = try await transport.send(request, timeout: attemptLimit)
        if !RetryPolicy.isRetriableStatus(response.status) || isFinal(response) {
          budget?.recordSuccess(spent: spent)
          return response
        }
        let header = response.header("retry-after")
        retryAfter = header.flatMap { RetryAfter.seconds(from: $0, now: environment.now()) }
        if response.status == 429 {
          failure = .rateLimited(retryAfter: retryAfter, response: response)
        } else {
          failure = .serverError(status: response.status, response: response)
        }
        wasTimeout = false
      } catch let error as HTTPFailure {
        if case .bodyTooLarge = error { throw error }
        failure = error
        if case .timedOut = error {
          wasTimeout = true
          if limitedByTotal {
            throw HTTPFailure.timedOut(
              "total timeout of \(Self.format(policy.totalTimeout)) expired")
          }
        } else {
          wasTimeout = false
        }
      } catch let error as AttemptTimedOut {
        wasTimeout = true
        if limitedByTotal {
          throw HTTPFailure.timedOut("total timeout of \(Self.format(policy.totalTimeout)) expired")
        }
        failure = .timedOut(
          "no complete response within the \(Self.format(error.seconds)) attempt timeout")
      }

      guard attempt < policy.maxAttempts else { throw failure }
      let delay = policy.delay(
        retry: attempt, retryAfter: retryAfter, unitRandom: environment.random())
      if let deadline {
        // Waiting past the deadline only to give up: report what actually went wrong.
        let remaining = deadline - monotonicSeconds()
        if delay >= remaining { throw failure }
      }
      if let budget {
        guard let cost = budget.acquireRetry(afterTimeout: wasTimeout) else { throw failure }
        spent += cost
      }
      try await environment.sleep(delay)
    }
  }

  private static func format(_ seconds: TimeInterval?) -> String {
    guard let seconds else { return "none" }
    return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
  }
}
