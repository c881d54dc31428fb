import BrazilianDocuments
import CepisHTTP
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A client for the CPF lookup API at [cpfhub.io](https://cpfhub.io).
///
/// ```swift
/// let client = CPFClient()  // key from the CPFHUB_API_KEY environment variable
/// let person = try await client.lookup("390.533.447-05")
/// print(person.name, person.birthDate)
/// ```
///
/// `CPFClient` is an immutable value, safe to share between tasks; keep one per process, since
/// it keeps its connections and its retry budget. Every call checks the CPF (length and check
/// digits), the key and the transport before sending anything; then it retries 429, 5xx and
/// network failures with full-jitter backoff (honouring `Retry-After`) and enforces its own
/// deadlines, on Linux as on Apple platforms.
///
/// The API key is sent only in the `x-api-key` header, and only over HTTPS (or plain HTTP to a
/// loopback host, for tests). It never appears in an error, a URL, the `User-Agent`, or the
/// client's `description`, `debugDescription` or `dump`.
public struct CPFClient: Sendable {
  /// The public API: `https://api.cpfhub.io`.
  public static let defaultBaseURL: URL = {
    guard let url = URL(string: "https://api.cpfhub.io") else { preconditionFailure("constant") }
    return url
  }()

  /// The environment variable read when no key is passed: `CPFHUB_API_KEY`.
  public static let apiKeyEnvironmentVariable = "CPFHUB_API_KEY"

  /// This library's version, as sent in the `User-Agent`.
  public static let version = "0.1.0"

  /// The largest response body accepted: anything bigger is
  /// ``CPFHubError/invalidResponse(_:)``.
  static let maxBodyBytes = 1 << 20

  /// The API's base URL, without trailing slashes.
  public let baseURL: URL
  /// The path before the CPF, such as `"/cpf"` or `"/v1/cpf"` (cpfhub's documents show both).
  public let pathPrefix: String
  /// The deadline of each attempt, in seconds (sub-second values are honoured).
  public let timeout: TimeInterval
  /// Attempts in all for one call, the first included.
  public let maxAttempts: Int
  /// The first backoff window, in seconds; it doubles with each retry.
  public let backoffBase: TimeInterval
  /// The longest wait between attempts, `Retry-After` included.
  public let backoffMax: TimeInterval
  /// The deadline of a whole call, attempts and waits included; `nil` for none.
  public let totalTimeout: TimeInterval?
  /// The `User-Agent` sent; `nil` sends `cpfhub-swift/<version>`.
  public let userAgent: String?
  /// The client-wide retry budget; `nil` when disabled.
  public let retryBudget: RetryBudget?
  /// The transport requests go through (see ``Transport``).
  public let transport: Transport

  /// Whether the client has an API key (given, or found in the environment).
  public var hasAPIKey: Bool { apiKey != nil }

  private let apiKey: APIKey?
  private let core: HTTPClientCore
  /// Who listens to this client's events; `nil` for nobody, and then no event is made.
  var observer: (any ClientEventObserver)?

  /// Creates a client.
  ///
  /// - Parameters:
  ///   - apiKey: the cpfhub.io key; `nil` reads the `CPFHUB_API_KEY` environment variable.
  ///     Surrounding whitespace is ignored; an empty key counts as none.
  ///   - baseURL: the API's address. Must be `https://`, or `http://` to a loopback host
  ///     (`127.0.0.0/8`, `::1`, `localhost`); anything else fails every call with
  ///     ``CPFHubError/insecureTransport(host:)`` before a request is made.
  ///   - pathPrefix: the path before the CPF (`"/cpf"` or `"/v1/cpf"`).
  ///   - timeout: the deadline of each attempt, in seconds.
  ///   - maxAttempts: attempts in all (at least 1).
  ///   - backoffBase: the first backoff window; the wait before attempt n+1 is drawn
  ///     uniformly from `[0, min(backoffBase · 2^(n−1), backoffMax)]`.
  ///   - backoffMax: the longest wait between attempts; also caps `Retry-After`.
  ///   - totalTimeout: a hard deadline for the whole call, or `nil`.
  ///   - userAgent: overrides the `User-Agent` header.
  ///   - transport: how requests are sent (see ``Transport``); ``Transport/default`` is
  ///     AsyncHTTPClient in a build with the `AsyncHTTPClient` trait, `URLSession` otherwise.
  ///   - retryBudget: the client-wide retry budget (see ``RetryBudget``); `nil` disables it.
  public init(
    apiKey: String? = nil,
    baseURL: URL = CPFClient.defaultBaseURL,
    pathPrefix: String = "/cpf",
    timeout: TimeInterval = 10,
    maxAttempts: Int = 3,
    backoffBase: TimeInterval = 0.5,
    backoffMax: TimeInterval = 8,
    totalTimeout: TimeInterval? = 15,
    userAgent: String? = nil,
    transport: Transport = .default,
    retryBudget: RetryBudget? = .standard
  ) {
    self.init(
      apiKey: apiKey, baseURL: baseURL, pathPrefix: pathPrefix, timeout: timeout,
      maxAttempts: maxAttempts, backoffBase: backoffBase, backoffMax: backoffMax,
      totalTimeout: totalTimeout, userAgent: userAgent, transport: transport,
      retryBudget: retryBudget, environment: ProcessInfo.processInfo.environment,
      httpEnvironment: .live)
  }

  /// Creates a client on a `URLSession` transport made from `session`'s configuration: the
  /// same as passing `transport: .urlSession(session.configuration)`.
  public init(
    apiKey: String? = nil,
    baseURL: URL = CPFClient.defaultBaseURL,
    pathPrefix: String = "/cpf",
    timeout: TimeInterval = 10,
    maxAttempts: Int = 3,
    backoffBase: TimeInterval = 0.5,
    backoffMax: TimeInterval = 8,
    totalTimeout: TimeInterval? = 15,
    userAgent: String? = nil,
    session: URLSession,
    retryBudget: RetryBudget? = .standard
  ) {
    self.init(
      apiKey: apiKey, baseURL: baseURL, pathPrefix: pathPrefix, timeout: timeout,
      maxAttempts: maxAttempts, backoffBase: backoffBase, backoffMax: backoffMax,
      totalTimeout: totalTimeout, userAgent: userAgent,
      transport: .urlSession(session.configuration), retryBudget: retryBudget)
  }

  /// The designated initializer, with the process environment (for the key fallback) and the
  /// retry loop's clock, sleeper and random source injectable for tests.
  package init(
    apiKey: String?,
    baseURL: URL,
    pathPrefix: String,
    timeout: TimeInterval,
    maxAttempts: Int,
    backoffBase: TimeInterval,
    backoffMax: TimeInterval,
    totalTimeout: TimeInterval?,
    userAgent: String?,
    transport: Transport,
    retryBudget: RetryBudget?,
    environment: [String: String],
    httpEnvironment: HTTPEnvironment = .live,
    observer: (any ClientEventObserver)? = CPFClient.defaultObserver
  ) {
    self.apiKey = APIKey(apiKey ?? environment[Self.apiKeyEnvironmentVariable])
    self.core = HTTPClientCore(
      baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts, backoffBase: backoffBase,
      backoffMax: backoffMax, totalTimeout: totalTimeout, transport: transport.base,
      maxBodyBytes: Self.maxBodyBytes, budget: retryBudget, environment: httpEnvironment)
    let policy = core.policy
    self.baseURL = core.baseURL
    self.pathPrefix = Self.normalize(pathPrefix: pathPrefix)
    self.timeout = policy.attemptTimeout
    self.maxAttempts = policy.maxAttempts
    self.backoffBase = policy.backoffBase
    self.backoffMax = policy.backoffMax
    self.totalTimeout = policy.totalTimeout
    self.userAgent = userAgent
    self.retryBudget = retryBudget
    self.transport = transport
    self.observer = observer
  }

  /// Looks up the person a CPF belongs to.
  ///
  /// Sends `GET {baseURL}{pathPrefix}/{11 digits}` with the headers `x-api-key` and
  /// `Accept: application/json`.
  ///
  /// ```swift
  /// let person = try await client.lookup("390.533.447-05")
  /// ```
  ///
  /// - Parameter cpf: masked or not (`"390.533.447-05"`, `"39053344705"`).
  /// - Returns: the person, whose ``Person/cpf`` is the CPF asked for.
  /// - Throws: ``CPFHubError``. Checked in this order before any request: `invalidCPF`
  ///   (length, characters, check digits), `missingAPIKey`, `insecureTransport`. Then
  ///   `unauthorized` (401/403), `cpfNotFound` (404 or `"success": false`), and after retries
  ///   `rateLimited`, `serverError` or `networkError` (a deadline included); `invalidResponse` for an
  ///   answer that is not the API's. Cancelling the task ends the call promptly with
  ///   `CancellationError`.
  public func lookup(_ cpf: String) async throws -> Person {
    try await CallScope.observe(
      .cpfLookup, server: baseURL.host ?? "", observer: observer
    ) {
      try await lookupUnobserved(cpf)
    }
  }

  private func lookupUnobserved(_ cpf: String) async throws -> Person {
    let document: CPF
    do {
      document = try CPF(cpf)
    } catch {
      throw CPFHubError.invalidCPF(error)
    }
    guard let apiKey else { throw CPFHubError.missingAPIKey }
    try checkTransport()
    let response = try await send(digits: document.digits, apiKey: apiKey)
    let person = try Self.interpret(response, for: document)
    CallScope.current?.record(.answered(source: "cpfhub"))
    return person
  }

  // MARK: - Plumbing

  /// Refuses any base URL that would carry the key in cleartext off this machine.
  func checkTransport() throws {
    let scheme = baseURL.scheme?.lowercased() ?? ""
    let host = baseURL.host ?? ""
    if scheme == "https", !host.isEmpty { return }
    if scheme == "http", Self.isLoopback(host: host) { return }
    throw CPFHubError.insecureTransport(host: host.isEmpty ? "(no host)" : String(host.prefix(100)))
  }

  private func send(digits: String, apiKey: APIKey) async throws -> HTTPResponse {
    let headers = [
      ("User-Agent", userAgent ?? "cpfhub-swift/\(Self.version)"),
      ("Accept", "application/json"),
      ("x-api-key", apiKey.value),
    ]
    guard
      let request = core.getRequest(pathPrefix + "/" + digits, headers: headers, endpoint: "cpf")
    else {
      throw CPFHubError.invalidResponse("cannot build a URL from the base URL")
    }
    do {
      return try await core.executor.perform(request)
    } catch let failure as HTTPFailure {
      throw Self.map(failure)
    }
  }

  static func map(_ failure: HTTPFailure) -> CPFHubError {
    switch failure {
    // Bodies are never quoted: they may hold names, birth dates and CPFs.
    case .rateLimited(let retryAfter, _):
      return .rateLimited(message: "rate limited (HTTP 429)", retryAfter: retryAfter)
    case .serverError(let status, _): return .serverError(message: "HTTP \(status)", status: status)
    case .network(let message), .timedOut(let message): return .networkError(message: message)
    case .bodyTooLarge(let limit):
      return .invalidResponse("response body larger than \(limit) bytes")
    case .redirectLoop:
      return .invalidResponse("the API's redirects go round in a loop")
    case .rateLimitedLocally(let message, let retryAfter):
      return .rateLimited(message: message, retryAfter: retryAfter)
    }
  }

  /// Turns a response that the retry core did not retry into a person or an error.
  ///
  /// Bodies are never quoted in errors: they hold names, birth dates and CPFs.
  static func interpret(_ response: HTTPResponse, for cpf: CPF) throws -> Person {
    switch response.status {
    case 200..<300:
      try requireJSON(response)
      let envelope: Envelope
      do {
        envelope = try JSONDecoder().decode(Envelope.self, from: response.body)
      } catch {
        throw CPFHubError.invalidResponse("JSON of an unexpected shape")
      }
      guard envelope.success else { throw CPFHubError.cpfNotFound(redactedCPF: cpf.redacted) }
      guard let person = envelope.data else {
        throw CPFHubError.invalidResponse("\"success\": true without \"data\"")
      }
      guard person.cpf == cpf else {
        throw CPFHubError.invalidResponse("the API answered for another CPF")
      }
      return person
    case 400:
      if response.looksLikeHTML { throw unexpectedStatus(response) }
      throw CPFHubError.invalidCPF(nil)
    case 401, 403:
      throw CPFHubError.unauthorized(status: response.status)
    case 404:
      if response.looksLikeHTML { throw unexpectedStatus(response) }
      throw CPFHubError.cpfNotFound(redactedCPF: cpf.redacted)
    default:
      throw unexpectedStatus(response)
    }
  }

  /// The response envelope: `{"success": Bool, "data": {…}}`. `data` is decoded only when
  /// `success` is true, so a failure's payload of any shape is still a clean "not found".
  private struct Envelope: Decodable {
    var success: Bool
    var data: Person?

    enum CodingKeys: String, CodingKey { case success, data }

    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: CodingKeys.self)
      success = try container.decode(Bool.self, forKey: .success)
      data = success ? try container.decodeIfPresent(Person.self, forKey: .data) : nil
    }
  }

  private static func requireJSON(_ response: HTTPResponse) throws {
    if response.looksLikeHTML {
      throw CPFHubError.invalidResponse(
        "expected JSON, got an HTML page (HTTP \(response.status); captive portal or proxy?)"
      )
    }
    if let type = response.mediaType, !response.isJSON, type != "text/plain" {
      throw CPFHubError.invalidResponse("expected JSON, got \(type.prefix(60))")
    }
  }

  private static func unexpectedStatus(_ response: HTTPResponse) -> CPFHubError {
    let kind = response.looksLikeHTML ? " with an HTML page" : ""
    return .invalidResponse("unexpected HTTP status \(response.status)\(kind)")
  }

  private static func normalize(pathPrefix: String) -> String {
    var text = pathPrefix.trimmingCharacters(in: .whitespaces)
    while text.hasSuffix("/") { text.removeLast() }
    guard !text.isEmpty else { return "" }
    if !text.hasPrefix("/") { text = "/" + text }
    var allowed = CharacterSet.urlPathAllowed
    allowed.remove(charactersIn: "?#;")
    return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
  }

}

extension CPFClient: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
  /// The client's settings, the API key shown as `<redacted>`.
  public var description: String {
    let total = totalTimeout.map { "\($0) s" } ?? "none"
    return
      "CPFClient(baseURL: \(core.base), pathPrefix: \(pathPrefix), apiKey: \(APIKey.describe(apiKey)), "
      + "timeout: \(timeout) s, maxAttempts: \(maxAttempts), totalTimeout: \(total))"
  }

  /// The same as ``description``.
  public var debugDescription: String { description }

  /// The client's settings for `dump` and debuggers, the API key shown as `<redacted>`.
  public var customMirror: Mirror {
    Mirror(
      self,
      children: [
        "baseURL": core.base,
        "pathPrefix": pathPrefix,
        "apiKey": APIKey.describe(apiKey),
        "timeout": timeout,
        "maxAttempts": maxAttempts,
        "backoffBase": backoffBase,
        "backoffMax": backoffMax,
        "totalTimeout": totalTimeout as Any,
        "userAgent": userAgent as Any,
        "retryBudget": retryBudget as Any,
      ],
      displayStyle: .struct)
  }
}
