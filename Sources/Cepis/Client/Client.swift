import CepisHTTP
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A client for the CEP API at [cep.is](https://cep.is): official Correios DNE data.
///
/// `Client` is an immutable value, safe to share between tasks and threads; one instance
/// (or ``shared``) per process is the intended use, since it keeps its connections and its
/// retry budget.
///
/// ```swift
/// let address = try await Client.shared.lookup("01310-100")
/// print(address.logradouro, address.localidade, address.uf)
/// ```
///
/// Every call validates its input first (a malformed CEP costs no request), retries 429,
/// 5xx and network failures with full-jitter backoff, and enforces its own deadlines, on
/// Linux as on Apple platforms.
public struct Client: Sendable {
  /// The public API: `https://cep.is`.
  public static let defaultBaseURL: URL = {
    guard let url = URL(string: "https://cep.is") else { preconditionFailure("constant URL") }
    return url
  }()

  /// The most CEPs the batch endpoint accepts in one request.
  public static let maxBatch = 500

  /// This library's version, as sent in the `User-Agent`.
  public static let version = "0.1.0"

  /// A client with the default settings.
  public static let shared = Client()

  /// The largest response body accepted: anything bigger is ``CepisError/invalidResponse(_:)``.
  static let maxBodyBytes = 8 << 20

  /// How many batch requests ``lookupMany(_:)`` keeps in flight at once.
  static let batchConcurrency = 4

  /// The API's base URL, without trailing slashes; it may carry a path prefix
  /// (`http://host:8080/api`).
  public let baseURL: URL
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
  /// The `User-Agent` sent; `nil` sends `cepis-swift/<version> (+https://cep.is)`.
  public let userAgent: String?
  /// The client-wide retry budget; `nil` when disabled.
  public let retryBudget: RetryBudget?
  /// The transport requests go through (see ``Transport``).
  public let transport: Transport
  /// The public services ``lookup(_:)`` asks, in order, when cep.is cannot answer (see
  /// ``Fallback``); empty for none, the default. The bulk lookups (``lookupMany(_:)``,
  /// `lookups`) never use them.
  public let fallbacks: [Fallback]
  /// How long ``lookup(_:)`` waits for cep.is before asking the first fallback in parallel,
  /// in seconds; `nil` (the default) asks fallbacks only once cep.is has failed. Ignored
  /// without ``fallbacks``.
  public let hedgeAfter: TimeInterval?
  /// The cache ``lookup(_:)``, ``lookups(_:cep:options:)->LookupStream<Rows>`` and
  /// ``lookupMany(_:)`` answer from and store into (see ``AddressCache``); `nil`, the default, for
  /// none.
  public let cache: AddressCache?
  /// The rate this client keeps to on its own (see ``RateLimit``), shared with the clients
  /// built with the same limit on the same ``transport``; `nil`, the default, for none.
  public let rateLimit: RateLimit?

  let core: HTTPClientCore
  /// Who listens to this client's events (the command line's log, the `Observability`
  /// trait's adapters); `nil` for nobody, and then no event is made.
  var observer: (any ClientEventObserver)?
  /// The host of ``baseURL`` (`server.address` in events).
  let serverAddress: String
  /// The headers of every request to cep.is, built once.
  let requestHeaders: [(String, String)]

  /// Creates a client.
  ///
  /// ```swift
  /// let client = Client(timeout: 2, maxAttempts: 4, totalTimeout: 8)
  /// ```
  ///
  /// - Parameters:
  ///   - baseURL: the API's address; trailing slashes are ignored, a path prefix is kept.
  ///   - timeout: the deadline of each attempt, in seconds.
  ///   - maxAttempts: attempts in all (at least 1).
  ///   - backoffBase: the first backoff window; the wait before attempt n+1 is drawn
  ///     uniformly from `[0, min(backoffBase · 2^(n−1), backoffMax)]`.
  ///   - backoffMax: the longest wait between attempts; also caps `Retry-After`.
  ///   - totalTimeout: a hard deadline for the whole call, or `nil`.
  ///   - userAgent: overrides the `User-Agent` header.
  ///   - transport: how requests are sent; ``Transport/default`` is AsyncHTTPClient in a build
  ///     with the `AsyncHTTPClient` trait, `URLSession` otherwise. Every behaviour above —
  ///     retries, deadlines, cancellation, the body cap, redirects, errors — is the same on each.
  ///   - retryBudget: the client-wide retry budget (see ``RetryBudget``); `nil` disables it.
  ///   - fallbacks: public services asked, in order, when cep.is ends without an answer
  ///     (see ``Fallback``); never after "not found", never by the bulk lookups
  ///     (``lookupMany(_:)``, `lookups`).
  ///   - hedgeAfter: seconds after which, cep.is not having answered yet, the first fallback
  ///     is asked in parallel and the first definitive answer wins; `nil` (or NaN) for no
  ///     hedging. Negative values count as 0.
  ///   - cache: where ``lookup(_:)`` and the bulk lookups keep cep.is's answers, tied to the
  ///     DNE edition (see ``AddressCache``); `nil`, the default, for none.
  ///   - rateLimit: a rate of requests to cep.is this client keeps to, for users who know
  ///     their quota (see ``RateLimit``); shared with every client built with the same limit
  ///     on the same `transport`. `nil`, the default, for none: the bulk lookups still adapt
  ///     to the API's 429s on their own.
  public init(
    baseURL: URL = Client.defaultBaseURL,
    timeout: TimeInterval = 10,
    maxAttempts: Int = 3,
    backoffBase: TimeInterval = 0.5,
    backoffMax: TimeInterval = 8,
    totalTimeout: TimeInterval? = nil,
    userAgent: String? = nil,
    transport: Transport = .default,
    retryBudget: RetryBudget? = .standard,
    fallbacks: [Fallback] = [],
    hedgeAfter: TimeInterval? = nil,
    cache: AddressCache? = nil,
    rateLimit: RateLimit? = nil
  ) {
    self.init(
      baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts, backoffBase: backoffBase,
      backoffMax: backoffMax, totalTimeout: totalTimeout, userAgent: userAgent,
      transport: transport, retryBudget: retryBudget, fallbacks: fallbacks,
      hedgeAfter: hedgeAfter, cache: cache, rateLimit: rateLimit, environment: .live)
  }

  /// Creates a client on a `URLSession` transport made from `session`'s configuration: the
  /// same as passing `transport: .urlSession(session.configuration)`.
  ///
  /// Only the configuration is used (proxies, headers, cookies); the session's delegate is
  /// not, because the client must stream bodies itself to enforce its size cap and deadlines.
  public init(
    baseURL: URL = Client.defaultBaseURL,
    timeout: TimeInterval = 10,
    maxAttempts: Int = 3,
    backoffBase: TimeInterval = 0.5,
    backoffMax: TimeInterval = 8,
    totalTimeout: TimeInterval? = nil,
    userAgent: String? = nil,
    session: URLSession,
    retryBudget: RetryBudget? = .standard,
    cache: AddressCache? = nil
  ) {
    self.init(
      baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts, backoffBase: backoffBase,
      backoffMax: backoffMax, totalTimeout: totalTimeout, userAgent: userAgent,
      transport: .urlSession(session.configuration), retryBudget: retryBudget, cache: cache,
      environment: .live)
  }

  /// The designated initializer, with an injectable clock, sleeper and random source.
  package init(
    baseURL: URL,
    timeout: TimeInterval,
    maxAttempts: Int,
    backoffBase: TimeInterval,
    backoffMax: TimeInterval,
    totalTimeout: TimeInterval?,
    userAgent: String?,
    transport: Transport,
    retryBudget: RetryBudget?,
    fallbacks: [Fallback] = [],
    hedgeAfter: TimeInterval? = nil,
    cache: AddressCache? = nil,
    rateLimit: RateLimit? = nil,
    environment: HTTPEnvironment,
    observer: (any ClientEventObserver)? = Client.defaultObserver
  ) {
    self.core = HTTPClientCore(
      baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts, backoffBase: backoffBase,
      backoffMax: backoffMax, totalTimeout: totalTimeout, transport: transport.base,
      maxBodyBytes: Self.maxBodyBytes, budget: retryBudget, environment: environment,
      pacer: rateLimit.map { transport.pacers.pacer(for: $0) })
    self.rateLimit = rateLimit
    let policy = core.policy
    self.baseURL = core.baseURL
    self.timeout = policy.attemptTimeout
    self.maxAttempts = policy.maxAttempts
    self.backoffBase = policy.backoffBase
    self.backoffMax = policy.backoffMax
    self.totalTimeout = policy.totalTimeout
    self.userAgent = userAgent
    self.requestHeaders = [
      ("User-Agent", userAgent ?? "cepis-swift/\(Self.version) (+https://cep.is)"),
      ("Accept", "application/json, text/csv;q=0.9, */*;q=0.1"),
    ]
    self.transport = transport
    self.retryBudget = retryBudget
    self.observer = observer
    self.serverAddress = core.baseURL.host ?? ""
    self.fallbacks = fallbacks
    self.cache = cache
    // Negative delays hedge at once; an infinite one never hedges in practice; NaN is none.
    self.hedgeAfter = hedgeAfter.flatMap { delay -> TimeInterval? in
      if delay.isNaN { return nil }
      return delay.isFinite ? max(0, delay) : (delay > 0 ? 86_400 : 0)
    }
  }

  /// Looks up one CEP.
  ///
  /// ```swift
  /// let address = try await client.lookup("01001-000")
  /// address.logradouro  // "Praça da Sé"
  /// address.geo?.isPrecise
  /// ```
  ///
  /// With ``fallbacks``, a lookup that cep.is ends without an answer (`networkError`,
  /// `serverError`, `rateLimited`, a timeout) asks them in order, one attempt each, within
  /// what is left of ``totalTimeout``; with ``hedgeAfter``, the first fallback starts in
  /// parallel once cep.is is that late. See ``Fallback`` for the rules.
  ///
  /// With a ``cache``, a fresh answer of the single endpoint (an address with its `geo`, or
  /// "does not exist") is returned with no request; otherwise cep.is's answer is stored with
  /// the live DNE edition. When cep.is and every fallback fail, an address kept from another
  /// edition is returned instead of the error, marked by ``Address/staleEdition``. The cache
  /// never makes a lookup fail. See ``AddressCache``.
  ///
  /// - Parameter cep: masked or not (`"01001-000"`, `"01001000"`).
  /// - Returns: the address, with ``Address/geo`` when the API has coordinates and
  ///   ``Address/source`` naming the service that answered.
  /// - Throws: ``CepisError``: `invalidCEP` before any request for a malformed CEP,
  ///   `cepNotFound` for 404 (or a fallback's "not found"), and after retries `rateLimited`,
  ///   `serverError` or `networkError` (cep.is's own error, even when fallbacks failed too);
  ///   `invalidResponse` for an answer that is not the API's. Cancelling the task ends the
  ///   call promptly with `CancellationError`.
  public func lookup(_ cep: String) async throws -> Address {
    try await observed(.lookup) {
      let digits = try normalizeCEP(cep)
      let address: Address
      if let cache {
        address = try await lookup(digits, through: cache)
      } else {
        address = try await lookupFromNetwork(digits)
      }
      Self.record(.answered(source: address.source.eventName))
      return address
    }
  }

  /// Looks up a normalised CEP at cep.is, then at the fallbacks.
  func lookupFromNetwork(_ digits: String) async throws -> Address {
    if !fallbacks.isEmpty {
      return try await lookupWithFallbacks(digits)
    }
    return try await lookupAtCepis(digits)
  }

  /// Looks up a normalised CEP at cep.is alone, retries included.
  func lookupAtCepis(_ digits: String) async throws -> Address {
    let response = try await send(path: "/" + digits, endpoint: "single")
    switch response.status {
    case 200..<300:
      try Self.requireJSON(response)
      let address: Address
      do {
        if let fast = Address.fastCepisAnswer(response.body) {
          address = fast
        } else {
          let decoder = JSONDecoder()
          decoder.userInfo[Address.fromCepisKey] = true
          address = try decoder.decode(Address.self, from: response.body)
        }
      } catch {
        throw CepisError.invalidResponse(
          "JSON of an unexpected shape: \(response.bodyPreview())")
      }
      guard address.cep == digits else {
        throw CepisError.invalidResponse(
          "the API answered for CEP \(address.cep) when \(digits) was asked")
      }
      return address
    case 404:
      if response.looksLikeHTML { throw Self.unexpectedStatus(response) }
      throw CepisError.cepNotFound(digits)
    case 400:
      throw CepisError.invalidCEP(
        Self.mensagem(in: response) ?? "the API rejected CEP \(digits)")
    default:
      throw Self.unexpectedStatus(response)
    }
  }

  /// Reports the API's health and the DNE edition it serves.
  ///
  /// A degraded API (HTTP 503 with a health report) does not throw: it arrives as a
  /// ``Health`` whose ``Health/ok`` is `false`.
  ///
  /// - Throws: ``CepisError`` when the API cannot be reached or answers something else.
  public func health() async throws -> Health {
    try await observed(.health) { try await healthUnobserved() }
  }

  private func healthUnobserved() async throws -> Health {
    let response = try await send(path: "/health", endpoint: "health") { response in
      response.status == 503 && (try? JSONDecoder().decode(Health.self, from: response.body)) != nil
    }
    guard (200..<300).contains(response.status) || response.status == 503 else {
      throw Self.unexpectedStatus(response)
    }
    try Self.requireJSON(response)
    do {
      return try JSONDecoder().decode(Health.self, from: response.body)
    } catch {
      throw CepisError.invalidResponse("not a health report: \(response.bodyPreview())")
    }
  }

  // MARK: - Plumbing shared with the batch path

  /// Performs `GET {base}{pathAndQuery}` through the retry core and maps its failures.
  func send(
    path pathAndQuery: String,
    endpoint: String,
    gate: RateGate? = nil,
    isFinal: @escaping @Sendable (HTTPResponse) -> Bool = { _ in false }
  ) async throws -> HTTPResponse {
    guard
      let request = core.getRequest(pathAndQuery, headers: requestHeaders, endpoint: endpoint)
    else {
      throw CepisError.invalidResponse("cannot build a URL from base \(quoted(core.base))")
    }
    do {
      return try await core.executor.perform(request, gate: gate, isFinal: isFinal)
    } catch let failure as HTTPFailure {
      throw Self.map(failure)
    }
  }

  static func map(_ failure: HTTPFailure) -> CepisError {
    switch failure {
    case .rateLimited(let retryAfter, let response):
      return .rateLimited(
        message: mensagem(in: response) ?? "rate limited (HTTP 429)", retryAfter: retryAfter)
    case .serverError(let status, let response):
      return .serverError(message: mensagem(in: response) ?? "HTTP \(status)", status: status)
    case .network(let message), .timedOut(let message):
      return .networkError(message: message)
    case .bodyTooLarge(let limit):
      return .invalidResponse("response body larger than \(limit) bytes")
    case .redirectLoop:
      return .invalidResponse("the API's redirects go round in a loop")
    case .rateLimitedLocally(let message, let retryAfter):
      return .rateLimited(message: message, retryAfter: retryAfter)
    }
  }

  static func requireJSON(_ response: HTTPResponse) throws {
    if response.looksLikeHTML {
      throw CepisError.invalidResponse(
        "expected JSON, got an HTML page (captive portal or proxy?): \(response.bodyPreview())")
    }
    if let type = response.mediaType, !response.isJSON, type != "text/plain" {
      throw CepisError.invalidResponse("expected JSON, got \(type): \(response.bodyPreview())")
    }
  }

  static func unexpectedStatus(_ response: HTTPResponse) -> CepisError {
    .invalidResponse("unexpected HTTP status \(response.status): \(response.bodyPreview())")
  }

  /// The API's `{"mensagem": "…"}`, when the body is that.
  static func mensagem(in response: HTTPResponse) -> String? {
    struct Envelope: Decodable { var mensagem: String? }
    guard response.isJSON || response.body.first == UInt8(ascii: "{"),
      let envelope = try? JSONDecoder().decode(Envelope.self, from: response.body),
      let text = envelope.mensagem, !text.isEmpty
    else { return nil }
    return String(text.prefix(200))
  }
}
