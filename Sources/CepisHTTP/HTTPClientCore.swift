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

  /// Creates the core of a client; the retry settings are clamped into ``policy``, which the
  /// client's own public properties then report.
  package init(
    baseURL: URL,
    timeout: TimeInterval,
    maxAttempts: Int,
    backoffBase: TimeInterval,
    backoffMax: TimeInterval,
    totalTimeout: TimeInterval?,
    session: URLSession,
    maxBodyBytes: Int,
    budget: RetryBudget.Configuration?,
    environment: HTTPEnvironment
  ) {
    var text = baseURL.absoluteString
    while text.hasSuffix("/") { text.removeLast() }
    self.base = text
    self.baseURL = URL(string: text) ?? baseURL
    let policy = RetryPolicy(
      maxAttempts: maxAttempts, backoffBase: backoffBase, backoffMax: backoffMax,
      attemptTimeout: timeout, totalTimeout: totalTimeout)
    self.policy = policy
    self.executor = HTTPExecutor(
      policy: policy,
      transport: HTTPTransport(configuration: session.configuration, maxBodyBytes: maxBodyBytes),
      budget: budget.map { RetryBudget($0) },
      environment: environment)
  }

  /// A `GET` for `base + pathAndQuery` with `headers`, no HTTP caching, and a URLSession
  /// timeout far beyond the core's own deadlines (a backstop, never the deadline itself);
  /// `nil` when the text is not a URL.
  package func getRequest(_ pathAndQuery: String, headers: [(String, String)]) -> URLRequest? {
    guard let url = URL(string: base + pathAndQuery) else { return nil }
    var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData)
    request.httpMethod = "GET"
    request.timeoutInterval = max(60, policy.attemptTimeout * 4)
    request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    return request
  }
}
