import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// What both API clients set up the same way: a base URL without trailing slashes, the
/// clamped retry policy, and the executor that runs their requests.
package struct HTTPClientCore: Sendable {
  /// The base URL as text, without trailing slashes (paths are appended to it).
  package let base: String
  /// The base URL without trailing slashes (the given one when stripping leaves no URL).
  package let baseURL: URL
  /// The retry and deadline settings, clamped to sensible values.
  package let policy: RetryPolicy
  /// The retry loop.
  package let executor: HTTPExecutor
  /// The largest response body accepted, in bytes.
  package let maxBodyBytes: Int

  /// Creates the core of a client; the retry settings are clamped into ``policy``, which the
  /// client's own public properties then report.
  package init(
    baseURL: URL,
    timeout: TimeInterval,
    maxAttempts: Int,
    backoffBase: TimeInterval,
    backoffMax: TimeInterval,
    totalTimeout: TimeInterval?,
    transport: any HTTPTransport,
    maxBodyBytes: Int,
    budget: RetryBudget?,
    environment: HTTPEnvironment,
    pacer: RequestPacer? = nil
  ) {
    var text = baseURL.absoluteString
    while text.hasSuffix("/") { text.removeLast() }
    self.base = text
    self.baseURL = URL(string: text) ?? baseURL
    let policy = RetryPolicy(
      maxAttempts: maxAttempts, backoffBase: backoffBase, backoffMax: backoffMax,
      attemptTimeout: timeout, totalTimeout: totalTimeout)
    self.policy = policy
    self.maxBodyBytes = maxBodyBytes
    self.executor = HTTPExecutor(
      policy: policy,
      transport: transport,
      budget: budget.map { RetryTokenBucket($0) },
      environment: environment,
      pacer: pacer)
  }

  /// A `GET` for `base + pathAndQuery` with `headers` and this client's body cap; `nil` when
  /// the text is not a URL.
  package func getRequest(
    _ pathAndQuery: String, headers: [(String, String)], endpoint: String = "request"
  ) -> HTTPRequest? {
    guard let url = URL(string: base + pathAndQuery) else { return nil }
    return HTTPRequest(
      url: url,
      headers: headers.map { (name: $0.0, value: $0.1) } + [("Cache-Control", "no-cache")],
      maxBodyBytes: maxBodyBytes, endpoint: endpoint)
  }
}
