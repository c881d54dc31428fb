import BrazilianDocuments
import Foundation

/// Everything a CPF lookup can fail with, split by what the caller should do about it.
///
/// | case | when | retried? |
/// |---|---|---|
/// | ``invalidCPF(_:)`` | wrong length, stray characters or wrong check digits (no request), or HTTP 400 | no |
/// | ``missingAPIKey`` | no key given and none in `CPFHUB_API_KEY` (no request) | no |
/// | ``insecureTransport(host:)`` | an `http://` base URL whose host is not loopback (no request) | no |
/// | ``unauthorized(status:)`` | HTTP 401 or 403 | no |
/// | ``cpfNotFound(redactedCPF:)`` | HTTP 404, or 200 with `"success": false` | no |
/// | ``rateLimited(message:retryAfter:)`` | HTTP 429 on every attempt | yes |
/// | ``serverError(message:status:)`` | HTTP 500, 502, 503 or 504 on every attempt | yes |
/// | ``networkError(message:)`` | connection refused, reset or cut short, or a deadline (`timeout`, `totalTimeout`) expired | yes |
/// | ``invalidResponse(_:)`` | an HTML page, JSON of another shape, an unexpected status | no |
///
/// ``errorDescription`` is Brazilian Portuguese, ready for a screen; ``message`` is English,
/// for developers and logs. No case ever carries the API key, a full CPF (only the redacted
/// form, `***.533.447-**`), a name or a birth date: response bodies are never quoted.
///
/// ### The same words as `CepisError`
///
/// Where a CPF lookup and a CEP lookup fail the same way, both enums use the same case name,
/// the same labels and the same ``kind``: `rateLimited(message:retryAfter:)`,
/// `serverError(message:status:)`, `networkError(message:)` (a deadline included) and
/// `invalidResponse(_:)`; `cpfNotFound` and `invalidCPF` mirror `cepNotFound` and `invalidCEP`.
/// ``isRetriable`` draws the same line in both.
///
/// ### Future cases
///
/// A minor release may add a case (named in the CHANGELOG's "Added" section); an existing case
/// keeps its name, payload and meaning until a major release. Give a `switch` over this enum an
/// `@unknown default` that falls back on ``isRetriable`` and ``message``, so that a new case
/// compiles and is handled sensibly:
///
/// ```swift
/// switch error {
/// case .invalidCPF, .cpfNotFound: askTheUserAgain()
/// case .missingAPIKey, .insecureTransport, .unauthorized: reportMisconfiguration()
/// case .rateLimited, .serverError, .networkError, .invalidResponse: showTryAgainLater()
/// @unknown default: error.isRetriable ? showTryAgainLater() : report(error.message)
/// }
/// ```
public enum CPFHubError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
  /// The CPF is malformed or its check digits do not match, decided locally before any
  /// request; `nil` when the API itself rejected it (HTTP 400).
  case invalidCPF(DocumentError?)
  /// No API key was given and the `CPFHUB_API_KEY` environment variable is unset or empty;
  /// no request was sent.
  case missingAPIKey
  /// The base URL is cleartext (`http://`) to a host that is not loopback, or has a scheme
  /// other than `https`; no request was sent, so the key never left the process.
  case insecureTransport(host: String)
  /// The API refused the key (HTTP 401 or 403).
  case unauthorized(status: Int)
  /// The API has no person with this CPF (HTTP 404, or `"success": false`). Carries the
  /// redacted CPF.
  case cpfNotFound(redactedCPF: String)
  /// The API kept answering 429 after every attempt; `retryAfter` is what it last asked for.
  /// `message` describes the status only: a response body is never quoted.
  case rateLimited(message: String, retryAfter: TimeInterval?)
  /// The API kept failing with a 5xx after every attempt. `message` describes the status
  /// only: a response body is never quoted.
  case serverError(message: String, status: Int)
  /// The API could not be reached after every attempt (refused, reset, cut short, no such
  /// host, a failed TLS handshake), or a deadline expired: the per-attempt `timeout` on the
  /// last attempt, or `totalTimeout`.
  case networkError(message: String)
  /// Something answered that is not the API: an HTML page (a captive portal, a proxy),
  /// JSON of another shape, a status the API does not use, or an oversized body.
  case invalidResponse(String)

  /// Whether the failure was transient, so the same call may succeed later: true for
  /// ``rateLimited(message:retryAfter:)``, ``serverError(message:status:)`` and
  /// ``networkError(message:)`` (which the client already retried), as for `CepisError`.
  public var isRetriable: Bool {
    switch self {
    case .rateLimited, .serverError, .networkError: return true
    case .invalidCPF, .missingAPIKey, .insecureTransport, .unauthorized, .cpfNotFound,
      .invalidResponse:
      return false
    }
  }

  /// A short kind name, stable for scripts, shared with `CepisError` where the meaning is
  /// shared: `invalid_cpf`, `missing_api_key`, `insecure_transport`, `unauthorized`,
  /// `not_found`, `rate_limited`, `server_error`, `network_error`, `invalid_response`.
  public var kind: String {
    switch self {
    case .invalidCPF: return "invalid_cpf"
    case .missingAPIKey: return "missing_api_key"
    case .insecureTransport: return "insecure_transport"
    case .unauthorized: return "unauthorized"
    case .cpfNotFound: return "not_found"
    case .rateLimited: return "rate_limited"
    case .serverError: return "server_error"
    case .networkError: return "network_error"
    case .invalidResponse: return "invalid_response"
    }
  }

  /// A human-readable explanation in English, for developers and logs.
  public var message: String {
    switch self {
    case .invalidCPF(let error?): return "invalid CPF: \(error.message)"
    case .invalidCPF(nil): return "invalid CPF: the API rejected it (HTTP 400)"
    case .missingAPIKey:
      return "no API key: pass apiKey: or set the CPFHUB_API_KEY environment variable"
    case .insecureTransport(let host):
      return "refusing to send the API key in cleartext to \(host); use https://"
    case .unauthorized(let status): return "the API rejected the API key (HTTP \(status))"
    case .cpfNotFound(let cpf): return "CPF \(cpf) not found"
    case .rateLimited(let message, let retryAfter?):
      return "\(message); retry after \(Self.seconds(retryAfter))"
    case .rateLimited(let message, nil): return message
    case .serverError(let message, _): return "server error: \(message)"
    case .networkError(let message): return "network error: \(message)"
    case .invalidResponse(let message): return "invalid response: \(message)"
    }
  }

  /// The same as ``message``.
  public var description: String { message }

  /// A Brazilian Portuguese sentence an app can show to its user as is.
  public var errorDescription: String? {
    switch self {
    case .invalidCPF(.wrongLength?), .invalidCPF(.invalidCharacter?):
      return "CPF inválido. Informe 11 dígitos numéricos."
    case .invalidCPF:
      return "CPF inválido. Confira os dígitos informados."
    case .missingAPIKey:
      return "Chave de API não configurada."
    case .insecureTransport:
      return "Conexão insegura recusada. A consulta exige HTTPS."
    case .unauthorized:
      return "Chave de API inválida ou sem permissão de acesso."
    case .cpfNotFound:
      return "CPF não encontrado na base de dados."
    case .rateLimited:
      return "Muitas consultas em pouco tempo. Aguarde alguns instantes e tente novamente."
    case .serverError:
      return "O serviço de consulta está indisponível no momento. Tente novamente mais tarde."
    case .networkError:
      return
        "Não foi possível falar com o serviço a tempo. Verifique sua conexão com a internet e tente novamente."
    case .invalidResponse:
      return "Resposta inesperada do serviço de consulta. Tente novamente mais tarde."
    }
  }

  private static func seconds(_ value: TimeInterval) -> String {
    value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
  }
}
