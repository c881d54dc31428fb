import CepisHTTP
import CepisMock
import CepisTestSupport
import Foundation

@testable import Cepis

/// The one way these tests build a client that talks to a server: over `transport`, with fast
/// backoff so that retry paths stay quick. Every network test goes through it, so a test run
/// over `testedTransportKinds` really runs over each transport.
func makeClient(
  _ transport: Transport.Kind,
  baseURL: URL,
  timeout: TimeInterval = 5,
  maxAttempts: Int = 3,
  backoffBase: TimeInterval = 0.01,
  backoffMax: TimeInterval = 0.05,
  totalTimeout: TimeInterval? = nil,
  retryBudget: RetryBudget? = .standard,
  fallbacks: [Fallback] = [],
  hedgeAfter: TimeInterval? = nil,
  rateLimit: RateLimit? = nil,
  environment: HTTPEnvironment = .live
) -> Client {
  Client(
    baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts, backoffBase: backoffBase,
    backoffMax: backoffMax, totalTimeout: totalTimeout, userAgent: nil,
    transport: makeTransport(transport), retryBudget: retryBudget, fallbacks: fallbacks,
    hedgeAfter: hedgeAfter, rateLimit: rateLimit, environment: environment)
}

/// ``makeClient(_:baseURL:timeout:maxAttempts:backoffBase:backoffMax:totalTimeout:retryBudget:fallbacks:hedgeAfter:rateLimit:environment:)``
/// pointed at `server`.
func fastClient(
  _ server: MockServer,
  _ transport: Transport.Kind,
  timeout: TimeInterval = 5,
  maxAttempts: Int = 3,
  backoffBase: TimeInterval = 0.01,
  backoffMax: TimeInterval = 0.05,
  totalTimeout: TimeInterval? = nil,
  retryBudget: RetryBudget? = .standard
) -> Client {
  makeClient(
    transport, baseURL: server.baseURL, timeout: timeout, maxAttempts: maxAttempts,
    backoffBase: backoffBase, backoffMax: backoffMax, totalTimeout: totalTimeout,
    retryBudget: retryBudget)
}

/// The truth for `cep`, as the mock serves it, converted to the client's type.
func expectedAddress(_ server: MockServer, _ cep: String, withGeo: Bool = true) -> Address? {
  guard let truth = server.dataset.address(for: cep) else { return nil }
  return Address(
    cep: truth.cep, logradouro: truth.logradouro, complemento: truth.complemento,
    bairro: truth.bairro, localidade: truth.localidade, uf: truth.uf, ibge: truth.ibge,
    geo: withGeo
      ? truth.geo.map { Geo(lat: $0.lat, lon: $0.lon, raioM: $0.raioM, precisao: $0.precisao) }
      : nil)
}

/// Seconds elapsed while running `body`.
func measure<T>(_ body: () async throws -> T) async rethrows -> (T, TimeInterval) {
  let start = Date()
  let value = try await body()
  return (value, Date().timeIntervalSince(start))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for `date`, built by hand so the test
/// does not depend on the parser under test or on locale-sensitive formatters.
func imfFixdate(_ date: Date) -> String {
  var calendar = Calendar(identifier: .gregorian)
  calendar.timeZone = TimeZone(identifier: "GMT") ?? .current
  let parts = calendar.dateComponents(
    [.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
  let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
  return String(
    format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", days[(parts.weekday ?? 1) - 1],
    parts.day ?? 1, months[(parts.month ?? 1) - 1], parts.year ?? 1970, parts.hour ?? 0,
    parts.minute ?? 0, parts.second ?? 0)
}

/// Waits (up to 10 s) until the server has logged `count` requests on `route`.
func waitForRequests(_ server: MockServer, on route: MockRoute, count: Int) async throws {
  let deadline = Date().addingTimeInterval(10)
  while requests(server, on: route).count < count {
    guard Date() < deadline else { throw CepisError.networkError(message: "request never arrived") }
    try await Task.sleep(nanoseconds: 10_000_000)
  }
}
