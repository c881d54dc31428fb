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
///   attempts in all, after a full-jitter backoff or the server's `Retry-After` (capped); a
///   ``TLSRejection`` (a certificate another attempt would meet again) never is;
/// - every other response is returned as it is, for the client module to interpret;
/// - cancelling the calling task ends the call promptly with `CancellationError`;
/// - a client-wide ``RetryTokenBucket`` stops retries when too many have failed recently.
package struct HTTPExecutor: Sendable {
  /// The retry and deadline settings.
  package let policy: RetryPolicy
  /// The transport that performs single attempts.
  package let transport: any HTTPTransport
  /// The client-wide retry budget, or `nil` for none.
  package let budget: RetryTokenBucket?
  /// Clock, sleeper and random source.
  package let environment: HTTPEnvironment
  /// The client's own rate limit (shared with the clients on its transport), or `nil`.
  package let pacer: RequestPacer?

  /// Creates an executor.
  package init(
    policy: RetryPolicy,
    transport: any HTTPTransport,
    budget: RetryTokenBucket?,
    environment: HTTPEnvironment = .live,
    pacer: RequestPacer? = nil
  ) {
    self.policy = policy
    self.transport = transport
    self.budget = budget
    self.environment = environment
    self.pacer = pacer
  }

  /// Runs `request` to completion.
  ///
  /// - Parameters:
  ///   - gate: the bulk run the request belongs to, if any (see ``RateGate``): each attempt
  ///     waits there for its turn, and a 429 pauses the whole run and is asked again, without
  ///     spending an attempt or the retry budget, until the gate's patience runs out.
  ///   - isFinal: a response that must be returned as it is even though its status is
  ///     normally retried (a `/health` answering 503 with a valid body, say).
  /// - Returns: the first response whose status is not retried.
  /// - Throws: ``HTTPFailure`` after the last attempt, or `CancellationError`.
  package func perform(
    _ request: HTTPRequest,
    gate: RateGate? = nil,
    isFinal: @Sendable (HTTPResponse) -> Bool = { _ in false }
  ) async throws -> HTTPResponse {
    // `ContinuousClock` needs macOS 13; a monotonic uptime works everywhere we ship.
    let deadline = policy.totalTimeout.map { monotonicSeconds() + $0 }
    var spent = 0
    var attempt = 0
    // Read once: `nil` when nobody listens, and then no event is built.
    let call = CallScope.current
    let endpoint = request.endpoint
    while true {
      attempt += 1
      try Task.checkCancellation()
      // Turns first: the run's gate, then the client's own rate. Neither is an attempt.
      let ticket = try await gate?.admit(deadline: deadline)
      do {
        try await pacer?.acquire(deadline: deadline, sleep: environment.sleep)
      } catch {
        if let gate, let ticket { gate.released(ticket) }
        throw error
      }
      let failure: HTTPFailure
      let wasTimeout: Bool
      var retryAfter: TimeInterval?

      let attemptLimit: TimeInterval
      var limitedByTotal = false
      if let deadline {
        let remaining = deadline - monotonicSeconds()
        guard remaining > 0 else {
          if let gate, let ticket { gate.released(ticket) }
          throw HTTPFailure.timedOut("total timeout of \(Self.format(policy.totalTimeout)) expired")
        }
        attemptLimit = min(policy.attemptTimeout, remaining)
        limitedByTotal = remaining < policy.attemptTimeout
      } else {
        attemptLimit = policy.attemptTimeout
      }

      call?.record(.attemptStarted(endpoint: endpoint, attempt: attempt))
      let sentAt = call == nil ? 0 : monotonicSeconds()
      do {
        let response: HTTPResponse
        do {
          response = try await sendFollowingRedirects(request, timeout: attemptLimit)
        } catch {
          if let gate, let ticket { gate.released(ticket) }
          call?.recordAttemptEnded(endpoint, attempt, error: error, since: sentAt)
          throw error
        }
        call?.record(
          .attemptEnded(
            endpoint: endpoint, attempt: attempt, status: response.status, errorType: nil,
            seconds: monotonicSeconds() - sentAt))
        let header = response.header("retry-after")
        retryAfter = header.flatMap { RetryAfter.seconds(from: $0, now: environment.now()) }
        if response.status == 429 {
          call?.record(.rateLimited(endpoint: endpoint, retryAfter: retryAfter))
        }
        if let gate, let ticket {
          if response.status == 429 {
            // The whole run pauses and asks again: no attempt spent, no budget.
            call?.record(.bulkPaused(seconds: retryAfter))
            gate.refused(ticket, retryAfter: retryAfter, response: response)
            attempt -= 1
            continue
          }
          gate.answered(ticket)
        }
        if !RetryPolicy.isRetriableStatus(response.status) || isFinal(response) {
          budget?.recordSuccess(spent: spent)
          return response
        }
        if response.status == 429 {
          failure = .rateLimited(retryAfter: retryAfter, response: response)
        } else {
          failure = .serverError(status: response.status, response: response)
        }
        wasTimeout = false
      } catch let error as HTTPFailure {
        if error == .redirectLoop { throw error }
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
      } catch let rejection as TLSRejection {
        // Another attempt would meet the same certificate: never retried.
        throw HTTPFailure.network(rejection.message)
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
        guard let cost = budget.acquireRetry(afterTimeout: wasTimeout) else {
          call?.record(.retryBudgetRefused(endpoint: endpoint))
          throw failure
        }
        spent += cost
      }
      call?.record(
        .retryScheduled(
          endpoint: endpoint, attempt: attempt, wait: delay, reason: Self.reason(failure)))
      try await environment.sleep(delay)
    }
  }

  /// The most redirects followed within one attempt.
  package static let maxRedirects = 5

  /// One attempt: `request`, then any same-origin redirects, all within `timeout`.
  ///
  /// Transports never follow redirects; this is the one place that does, for all of them.
  /// A redirect is followed only to the same scheme, host and port: a redirect must never move
  /// a request (and its headers, such as an API key) to another origin or to cleartext. Any
  /// other 3xx is returned as it is, for the client module to report; a redirect back to a URL
  /// already visited, or more than ``maxRedirects`` of them, is ``HTTPFailure/redirectLoop``.
  /// The response's body is
  /// also checked against its `Content-Length` here, whatever the transport reported.
  package func sendFollowingRedirects(
    _ request: HTTPRequest, timeout: TimeInterval
  ) async throws -> HTTPResponse {
    let attemptDeadline = monotonicSeconds() + timeout
    var current = request
    var visited: [URL] = [request.url]
    while true {
      let remaining = attemptDeadline - monotonicSeconds()
      guard remaining > 0 else { throw AttemptTimedOut(seconds: timeout) }
      let response: HTTPResponse
      do {
        response = try await transport.send(current, timeout: remaining)
      } catch is AttemptTimedOut {
        throw AttemptTimedOut(seconds: timeout)
      }
      try Self.checkFraming(response)
      guard Self.isRedirect(response.status),
        let next = Self.sameOriginTarget(of: response, from: current.url)
      else { return response }
      guard visited.count <= Self.maxRedirects, !visited.contains(next) else {
        throw HTTPFailure.redirectLoop
      }
      visited.append(next)
      current.url = next
    }
  }

  /// Whether `status` is a redirect that names a new location.
  static func isRedirect(_ status: Int) -> Bool {
    [301, 302, 303, 307, 308].contains(status)
  }

  /// The `Location` of `response`, resolved against `url`, when it keeps the same scheme, host
  /// and port; `nil` otherwise.
  package static func sameOriginTarget(of response: HTTPResponse, from url: URL) -> URL? {
    guard let location = response.header("location"),
      let target = URL(string: location, relativeTo: url)?.absoluteURL
    else { return nil }
    func origin(_ url: URL) -> (String, String, Int)? {
      guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else {
        return nil
      }
      return (scheme, host, url.port ?? (scheme == "https" ? 443 : 80))
    }
    guard let from = origin(url), let to = origin(target), from == to else { return nil }
    return target
  }

  /// A body cut short of its `Content-Length` is a broken connection, whatever the transport
  /// reported (compressed bodies are measured before decoding, so they are not checked).
  static func checkFraming(_ response: HTTPResponse) throws {
    guard response.headers["content-encoding"] == nil,
      let declared = response.headers["content-length"],
      let expected = contentLength(declared),
      expected != response.body.count
    else { return }
    throw HTTPFailure.network(
      "body truncated: \(response.body.count) of \(expected) bytes received")
  }

  /// Why an attempt is retried, for events: its status, or its failure's kind.
  private static func reason(_ failure: HTTPFailure) -> String {
    switch failure {
    case .rateLimited: return "429"
    case .serverError(let status, _): return String(status)
    default: return ClientEvent.kind(of: failure)
    }
  }

  private static func format(_ seconds: TimeInterval?) -> String {
    guard let seconds else { return "none" }
    return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
  }
}
