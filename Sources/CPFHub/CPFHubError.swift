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
/// | ``notFound(redactedCPF:)`` | HTTP 404, or 200 with `"success": false` | no |
/// | ``rateLimited(retryAfter:)`` | HTTP 429 on every attempt | yes |
/// | ``serverError(status:)`` | HTTP 500, 502, 503 or 504 on every attempt | yes |
/// | ``networkError(reason:)`` | connection refused, reset or cut short on every attempt | yes |
/// | ``timeout(reason:)`` | the attempt `timeout` on every attempt, or `totalTimeout` | yes |
/// | ``invalidResponse(reason:)`` | an HTML page, JSON of another shape, an unexpected status | no |
///
/// ``errorDescription`` is Brazilian Portuguese, ready for a screen; ``message`` is English,
/// for developers and logs. No case ever carries the API key, a full CPF (only the redacted
/// form, `***.533.447-**`), a name or a birth date: response bodies are never quoted.
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
  case notFound(redactedCPF: String)
  /// The API kept answering 429 after every attempt; `retryAfter` is what it last asked for.
  case rateLimited(retryAfter: TimeInterval?)
  /// The API kept failing with a 5xx after every attempt.
  case serverError(status: Int)
  /// The API could not be reached after every attempt.
  case networkError(reason: String)
  /// A deadline expired: the per-attempt `timeout` on the last attempt, or `totalTimeout`.
  case timeout(reason: String)
  /// Something answered that is not the API: an HTML page (a captive portal, a proxy),
  /// JSON of another shape, a status the API does not use, or an oversized body.
  case invalidResponse(reason: String)

  /// Whether the failure was transient, so the same call may succeed later: true for
  /// ``rateLimited(retryAfter:)``, ``serverError(status:)``, ``networkError(reason:)`` and
  /// ``timeout(reason:)`` (which the client already retried).
  public var isRetriable: Bool {
    switch self {
    case .rateLimited, .serverError, .networkError, .timeout: return true
    case .invalidCPF, .missingAPIKey, .insecureTransport, .unauthorized, .notFound,
      .invalidResponse:
      return false
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
    case .notFound(let cpf): return "CPF \(cpf) not found"
    case .rateLimited(let retryAfter?):
      return "rate limited (HTTP 429); retry after \(Self.seconds(retryAfter))"
    case .rateLimited(nil): return "rate limited (HTTP 429)"
    case .serverError(let status): return "server error (HTTP \(status))"
    case .networkError(let reason): return "network error: \(reason)"
    case .timeout(let reason): return "timed out: \(reason)"
    case .invalidResponse(let reason): return "invalid response: \(reason)"
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
    case .notFound:
      return "CPF não encontrado na base de dados."
    case .rateLimited:
      return "Muitas consultas em pouco tempo. Aguarde alguns instantes e tente novamente."
    case .serverError:
      return "O serviço de consulta está indisponível no momento. Tente novamente mais tarde."
    case .networkError:
      return "Não foi possível conectar ao serviço. Verifique sua conexão com a internet."
    case .timeout:
      return "O serviço demorou demais para responder. Tente novamente."
    case .invalidResponse:
      return "Resposta inesperada do serviço de consulta. Tente novamente mais tarde."
    }
  }

  private static func seconds(_ value: TimeInterval) -> String {
    value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
  }
}
