import Foundation

/// How a call ended when it did not produce a response the client module can decode.
///
/// Client modules map these to their own public errors; the core never decides what a
/// user sees.
package enum HTTPFailure: Error, Sendable, Equatable {
  /// The last attempt was answered 429; `retryAfter` is what the server asked for.
  case rateLimited(retryAfter: TimeInterval?, response: HTTPResponse)
  /// The last attempt was answered with a retriable 5xx.
  case serverError(status: Int, response: HTTPResponse)
  /// The connection failed: refused, reset, closed early, or a body shorter than its
  /// `Content-Length`.
  case network(String)
  /// A deadline expired: the attempt's `timeout` or the call's `totalTimeout`.
  case timedOut(String)
  /// The body exceeded the size cap, which is never worth retrying.
  case bodyTooLarge(limit: Int)
  /// Redirects went round in a circle or past ``HTTPExecutor/maxRedirects``; never retried.
  case redirectLoop
  /// The client's own rate limit (``RateLimit``) has no turn for the call before its deadline;
  /// `retryAfter` is when the turn would come. No request was sent for it.
  case rateLimitedLocally(message: String, retryAfter: TimeInterval?)
}
