import CepisHTTP
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A public CEP service that ``Client/lookup(_:)`` asks when cep.is cannot answer.
///
/// cep.is stays the authority (official DNE data, coordinates with their precision); a
/// fallback steps in only when cep.is ends **without an answer**: ``CepisError/networkError(message:)``
/// (a timeout included), ``CepisError/serverError(message:status:)`` or
/// ``CepisError/rateLimited(message:retryAfter:)`` after its retries. Never after
/// ``CepisError/cepNotFound(_:)`` (the DNE decides that a CEP does not exist), never for
/// ``CepisError/invalidCEP(_:)`` or ``CepisError/invalidResponse(_:)``.
///
/// ```swift
/// let client = Client(
///   totalTimeout: 5, fallbacks: [.viaCEP(), .brasilAPI()], hedgeAfter: 0.5)
/// let address = try await client.lookup("01001-000")
/// if address.source != .cepis { print("answered by \(address.source)") }
/// ```
///
/// The rules a caller can rely on:
/// - fallbacks are asked in the order given, **one attempt each** (no retries), each within
///   the client's ``Client/timeout`` and what is left of ``Client/totalTimeout``;
/// - each is asked only within its ``budget`` (per process; see ``FallbackBudget``), and not
///   at all for a cool-down after it answered 429 or 403: a fallback that may not be asked is
///   skipped, hedge or not;
/// - with ``Client/hedgeAfter``, when cep.is has not answered after that many seconds the
///   first fallback is asked in parallel; the first definitive answer (an address, or "not
///   found") wins and every other request in flight is cancelled, its connection closed. An
///   answer from cep.is that would not have led to a fallback (an address, "not found", a
///   rejected CEP, an invalid response) also ends the lookup as it would without fallbacks;
/// - a fallback's "not found" is ``CepisError/cepNotFound(_:)``; a fallback that fails (no
///   connection, a timeout, a 5xx, an outage reported as 404 by BrasilAPI, an answer of
///   another shape or for another CEP) is skipped;
/// - when every source fails, the error thrown is cep.is's own: the one a client without
///   fallbacks would have thrown.
///
/// ``Client/lookupMany(_:)`` never uses fallbacks: the public services have no batch
/// endpoint, and a batch would flood them.
public struct Fallback: Sendable, Hashable, CustomStringConvertible {
  /// ViaCEP's public address: `https://viacep.com.br`.
  public static let defaultViaCEPURL: URL = {
    guard let url = URL(string: "https://viacep.com.br") else {
      preconditionFailure("constant URL")
    }
    return url
  }()

  /// BrasilAPI's public address: `https://brasilapi.com.br`.
  public static let defaultBrasilAPIURL: URL = {
    guard let url = URL(string: "https://brasilapi.com.br") else {
      preconditionFailure("constant URL")
    }
    return url
  }()

  /// The service this fallback asks; the ``Address/source`` of its answers.
  public let source: AddressSource
  /// The service's base URL, without trailing slashes; a path prefix is kept.
  public let baseURL: URL
  /// `baseURL` as text, without trailing slashes.
  let base: String
  /// How often the service may be asked (see ``FallbackBudget``).
  public let budget: FallbackBudget

  private init(source: AddressSource, baseURL: URL, budget: FallbackBudget) {
    var text = baseURL.absoluteString
    while text.hasSuffix("/") { text.removeLast() }
    self.source = source
    self.base = text
    self.baseURL = URL(string: text) ?? baseURL
    self.budget = budget
  }

  /// [ViaCEP](https://viacep.com.br): `GET {baseURL}/ws/{cep}/json/`.
  ///
  /// Its answers carry `logradouro`, `complemento`, `bairro`, `localidade`, `uf` and `ibge`,
  /// no coordinates. A CEP it does not know is answered 200 `{"erro": true}` (or `"true"`):
  /// ``CepisError/cepNotFound(_:)``.
  ///
  /// - Parameters:
  ///   - baseURL: where ViaCEP is (a stand-in such as CepisMock in tests).
  ///   - budget: how often it may be asked; ``FallbackBudget/viaCEPDefault`` (3 a minute, 10
  ///     at once) keeps an address well clear of ViaCEP's blocks.
  public static func viaCEP(
    baseURL: URL = Fallback.defaultViaCEPURL, budget: FallbackBudget = .viaCEPDefault
  ) -> Fallback {
    Fallback(source: .viaCEP, baseURL: baseURL, budget: budget)
  }

  /// [BrasilAPI](https://brasilapi.com.br), CEP v2: `GET {baseURL}/api/cep/v2/{cep}`.
  ///
  /// `street`, `neighborhood`, `city` and `state` become ``Address/logradouro``,
  /// ``Address/bairro``, ``Address/localidade`` and ``Address/uf``; `complemento` and `ibge`
  /// are empty (it has none). Its coordinates, when present, become ``Address/geo`` with an
  /// unknown precision (``Geo/isPrecise`` is `false`). BrasilAPI answers 404 both for a CEP
  /// that does not exist and when its own upstream services are down: only a 404 whose every
  /// error says "not found" or "invalid CEP" is ``CepisError/cepNotFound(_:)``; any other is
  /// an outage, skipped like a failure.
  ///
  /// - Parameters:
  ///   - baseURL: where BrasilAPI is (a stand-in such as CepisMock in tests).
  ///   - budget: how often it may be asked; ``FallbackBudget/brasilAPIDefault`` (30 a
  ///     minute, 30 at once) stays well under the rate its maintainers mention.
  public static func brasilAPI(
    baseURL: URL = Fallback.defaultBrasilAPIURL, budget: FallbackBudget = .brasilAPIDefault
  ) -> Fallback {
    Fallback(source: .brasilAPI, baseURL: baseURL, budget: budget)
  }

  /// The service's name and address: `ViaCEP (https://viacep.com.br)`.
  public var description: String { "\(source) (\(base))" }

  /// The path asked for `cep` (8 digits).
  func path(for cep: String) -> String {
    switch source {
    case .viaCEP: return "/ws/\(cep)/json/"
    case .brasilAPI: return "/api/cep/v2/\(cep)"
    case .cepis: return "/\(cep)"
    }
  }

  /// A `GET` for `cep`, with the client's headers and body cap; `nil` when the base URL and
  /// path make no URL.
  func request(for cep: String, userAgent: String) -> HTTPRequest? {
    guard let url = URL(string: base + path(for: cep)) else { return nil }
    return HTTPRequest(
      url: url,
      headers: [
        ("Cache-Control", "no-cache"), ("User-Agent", userAgent), ("Accept", "application/json"),
      ],
      maxBodyBytes: Client.maxBodyBytes)
  }

  /// What a response of this service means for `cep`.
  func interpret(_ response: HTTPResponse, cep: String) -> FallbackOutcome {
    if response.looksLikeHTML {
      return .failed("HTTP \(response.status) with an HTML page")
    }
    if let type = response.mediaType, !response.isJSON, type != "text/plain" {
      return .failed("HTTP \(response.status) with \(type)")
    }
    switch source {
    case .viaCEP: return Self.interpretViaCEP(response, cep: cep)
    case .brasilAPI: return Self.interpretBrasilAPI(response, cep: cep)
    case .cepis: return .failed("cep.is is not a fallback")
    }
  }

  private static func interpretViaCEP(_ response: HTTPResponse, cep: String) -> FallbackOutcome {
    guard response.status == 200 else { return .failed("HTTP \(response.status)") }
    let answer: ViaCEPAnswer
    do {
      answer = try JSONDecoder().decode(ViaCEPAnswer.self, from: response.body)
    } catch {
      return .failed("JSON of an unexpected shape: \(response.bodyPreview())")
    }
    guard let address = answer.address else { return .notFound }
    guard address.cep == cep else {
      return .failed("answered for CEP \(address.cep) when \(cep) was asked")
    }
    return .found(address)
  }

  private static func interpretBrasilAPI(_ response: HTTPResponse, cep: String)
    -> FallbackOutcome
  {
    switch response.status {
    case 200:
      let address: Address
      do {
        address = try JSONDecoder().decode(BrasilAPIAnswer.self, from: response.body).address
      } catch {
        return .failed("JSON of an unexpected shape: \(response.bodyPreview())")
      }
      guard address.cep == cep else {
        return .failed("answered for CEP \(address.cep) when \(cep) was asked")
      }
      return .found(address)
    case 404:
      guard let report = try? JSONDecoder().decode(BrasilAPIErrorReport.self, from: response.body)
      else {
        return .failed("HTTP 404 without BrasilAPI's error report: \(response.bodyPreview())")
      }
      return report.meansNotFound ? .notFound : .failed("outage reported as 404: \(report.summary)")
    default:
      return .failed("HTTP \(response.status): \(response.bodyPreview())")
    }
  }
}

/// How one fallback attempt ended.
enum FallbackOutcome: Sendable, Equatable {
  /// An address for the CEP asked.
  case found(Address)
  /// The service says the CEP does not exist.
  case notFound
  /// No usable answer (the reason is for diagnostics only).
  case failed(String)
}

/// ViaCEP's answer: an address, or `{"erro": true}` / `{"erro": "true"}` for an unknown CEP.
struct ViaCEPAnswer: Decodable {
  /// The address, or `nil` when ViaCEP says the CEP does not exist.
  var address: Address?

  init(from decoder: Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    if try container.lenientBool("erro") == true {
      address = nil
      return
    }
    guard let cep = normalizedCEPDigits(try container.lenientString("cep").utf8) else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: [AnyKey("cep")], debugDescription: "missing or malformed cep"))
    }
    let localidade = try container.lenientString("localidade")
    let uf = try container.lenientString("uf")
    // Every real answer names a town and a state; without them this is not ViaCEP's shape.
    guard !localidade.isEmpty, !uf.isEmpty else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: [], debugDescription: "no localidade or uf"))
    }
    address = Address(
      cep: cep, logradouro: try container.lenientString("logradouro"),
      complemento: try container.lenientString("complemento"),
      bairro: try container.lenientString("bairro"), localidade: localidade, uf: uf,
      ibge: try container.lenientString("ibge"), geo: nil, source: .viaCEP)
  }
}

/// BrasilAPI's CEP v2 answer (`cep`, `state`, `city`, `neighborhood`, `street`, and
/// `location.coordinates` with `latitude`/`longitude` as strings, empty or absent when it has
/// no point).
struct BrasilAPIAnswer: Decodable {
  var address: Address

  init(from decoder: Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    guard let cep = normalizedCEPDigits(try container.lenientString("cep").utf8) else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: [AnyKey("cep")], debugDescription: "missing or malformed cep"))
    }
    let city = try container.lenientString("city")
    let state = try container.lenientString("state")
    guard !city.isEmpty, !state.isEmpty else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: [], debugDescription: "no city or state"))
    }
    address = Address(
      cep: cep, logradouro: try container.lenientString("street"), complemento: "",
      bairro: try container.lenientString("neighborhood"), localidade: city, uf: state,
      ibge: "", geo: Self.point(in: container), source: .brasilAPI)
  }

  /// `location.coordinates` as a ``Geo`` of unknown precision, or `nil` when BrasilAPI has no
  /// usable point (`{}`, empty strings, `null`, text that is not a number, out of range).
  private static func point(in container: KeyedDecodingContainer<AnyKey>) -> Geo? {
    guard
      let location = try? container.nestedContainer(
        keyedBy: AnyKey.self, forKey: AnyKey("location")),
      let coordinates = try? location.nestedContainer(
        keyedBy: AnyKey.self, forKey: AnyKey("coordinates")),
      let lat = coordinate(coordinates, "latitude"), let lon = coordinate(coordinates, "longitude"),
      abs(lat) <= 90, abs(lon) <= 180
    else { return nil }
    return Geo(lat: lat, lon: lon, raioM: 0, precisao: "")
  }

  private static func coordinate(_ container: KeyedDecodingContainer<AnyKey>, _ name: String)
    -> Double?
  {
    let key = AnyKey(name)
    if let number = try? container.decode(Double.self, forKey: key), number.isFinite {
      return number
    }
    guard let text = try? container.decode(String.self, forKey: key),
      let number = Double(text.trimmingCharacters(in: .whitespaces)), number.isFinite
    else { return nil }
    return number
  }
}

/// BrasilAPI's error report: `{"type": "service_error", "errors": [{"message": …}, …]}`.
struct BrasilAPIErrorReport: Decodable {
  struct Entry: Decodable {
    var message: String?
    var service: String?
  }

  var type: String?
  var errors: [Entry]?

  /// Whether every listed error says the CEP was not found or is invalid. An empty list, or
  /// any other error ("Erro ao se conectar com o serviço ViaCEP.", "A autenticacao de null
  /// falhou!"), is an outage: BrasilAPI could not ask, so it does not know.
  var meansNotFound: Bool {
    guard type == "service_error", let errors, !errors.isEmpty else { return false }
    return errors.allSatisfy { entry in
      guard let message = entry.message else { return false }
      let folded = message.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        .lowercased()
      return folded.contains("nao encontrado") || folded.contains("cep invalido")
    }
  }

  /// The errors in one short line, for diagnostics.
  var summary: String {
    let messages = (errors ?? []).compactMap { entry -> String? in
      guard let message = entry.message else { return nil }
      return entry.service.map { "\($0): \(message)" } ?? message
    }
    return String(messages.joined(separator: "; ").prefix(200))
  }
}
