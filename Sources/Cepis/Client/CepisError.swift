import Foundation

/// Everything a CEP lookup can fail with, split by what the caller should do about it.
///
/// | case | retried by the client? | what to do |
/// |---|---|---|
/// | ``invalidCEP(_:)`` | no (nothing was sent, or the API rejected it) | ask the user to correct it |
/// | ``cepNotFound(_:)`` | no | tell the user; the CEP does not exist |
/// | ``rateLimited(message:retryAfter:)`` | yes, until `maxAttempts` | slow down; try after `retryAfter` |
/// | ``serverError(message:status:)`` | yes, until `maxAttempts` | try again later |
/// | ``networkError(message:)`` | yes, until `maxAttempts` | check connectivity; try again |
/// | ``invalidResponse(_:)`` | no | something between you and the API answered instead (a captive portal, a proxy) |
///
/// `CPFHubError` uses the same words where a CPF lookup fails the same way:
/// `rateLimited(message:retryAfter:)`, `serverError(message:status:)`, `networkError(message:)`
/// (a deadline included, as here), `invalidResponse(_:)`, the same ``kind`` names and the same
/// ``isRetriable`` line; its `invalidCPF` and `cpfNotFound` mirror ``invalidCEP(_:)`` and
/// ``cepNotFound(_:)``.
///
/// ### Future cases
///
/// These six cases are the seed's and keep their names, payloads and meanings until a major
/// release. A minor release may add a case (named in the CHANGELOG's "Added" section), so give
/// a `switch` over this enum an `@unknown default` that falls back on ``isRetriable`` and
/// ``message``:
///
/// ```swift
/// switch error {
/// case .invalidCEP, .cepNotFound: askTheUserAgain()
/// case .rateLimited, .serverError, .networkError: showTryAgainLater()
/// case .invalidResponse: report(error.message)
/// @unknown default: error.isRetriable ? showTryAgainLater() : report(error.message)
/// }
/// ```
public enum CepisError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
  /// The CEP is malformed (decided locally, no request sent) or the API rejected it
  /// (HTTP 400, carrying its `mensagem`).
  case invalidCEP(String)
  /// The CEP is well formed but does not exist (HTTP 404). Carries the 8-digit CEP.
  case cepNotFound(String)
  /// The API kept answering 429 after every attempt; `retryAfter` is what it last asked for.
  case rateLimited(message: String, retryAfter: TimeInterval?)
  /// The API kept failing with a 5xx after every attempt.
  case serverError(message: String, status: Int)
  /// The API could not be reached, or a deadline (`timeout`, `totalTimeout`) expired.
  case networkError(message: String)
  /// A response arrived that is not what the API sends: an HTML page, JSON of another
  /// shape, a CSV without the expected columns, a body over the size cap, or a status the
  /// protocol does not use.
  case invalidResponse(String)

  /// A human-readable explanation in English, for developers and logs.
  public var message: String {
    switch self {
    case .invalidCEP(let message): return message
    case .cepNotFound(let cep): return "CEP \(cep) not found"
    case .rateLimited(let message, let retryAfter):
      if let retryAfter { return "\(message) (retry after \(Self.seconds(retryAfter)))" }
      return message
    case .serverError(let message, let status): return "server error \(status): \(message)"
    case .networkError(let message): return "network error: \(message)"
    case .invalidResponse(let message): return "invalid response: \(message)"
    }
  }

  /// Whether the failure was transient, so the same call may succeed later: true for
  /// ``rateLimited(message:retryAfter:)``, ``serverError(message:status:)`` and
  /// ``networkError(message:)``.
  public var isRetriable: Bool {
    switch self {
    case .rateLimited, .serverError, .networkError: return true
    case .invalidCEP, .cepNotFound, .invalidResponse: return false
    }
  }

  /// The same as ``message``.
  public var description: String { message }

  /// The same as ``message``, for APIs that show `localizedDescription`.
  public var errorDescription: String? { message }

  /// A short kind name, stable for scripts (`invalid_cep`, `not_found`, `rate_limited`,
  /// `server_error`, `network_error`, `invalid_response`).
  public var kind: String {
    switch self {
    case .invalidCEP: return "invalid_cep"
    case .cepNotFound: return "not_found"
    case .rateLimited: return "rate_limited"
    case .serverError: return "server_error"
    case .networkError: return "network_error"
    case .invalidResponse: return "invalid_response"
    }
  }

  private static func seconds(_ value: TimeInterval) -> String {
    value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
  }
}
