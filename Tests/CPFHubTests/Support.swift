import BrazilianDocuments
import CPFHub
import CepisMock
import Foundation
import Testing

/// The key the mock accepts in these tests: distinctive, so a leak is easy to find.
let testKey = "sk_test_9f8e7d6c5b4a-SECRET"

/// Starts a mock server, runs `body`, and stops the server whatever happens.
func withServer<T>(
  isolation: isolated (any Actor)? = #isolation,
  _ body: (MockServer) async throws -> T
) async throws -> T {
  try await MockServer.withServer(.init(cpfAPIKeys: [testKey]), isolation: isolation, body)
}

/// The one way these tests build a client: over `transport`, with tiny backoffs, short deadlines
/// and no reading of the real environment.
func makeClient(
  _ server: MockServer?,
  _ transport: Transport.Kind,
  apiKey: String? = testKey,
  baseURL: URL? = nil,
  pathPrefix: String = "/cpf",
  timeout: TimeInterval = 2,
  maxAttempts: Int = 3,
  backoffMax: TimeInterval = 0.05,
  totalTimeout: TimeInterval? = 5,
  userAgent: String? = nil,
  environment: [String: String] = [:]
) -> CPFClient {
  CPFClient(
    apiKey: apiKey,
    baseURL: baseURL ?? server?.baseURL ?? URL(string: "http://127.0.0.1:9")!,
    pathPrefix: pathPrefix, timeout: timeout, maxAttempts: maxAttempts, backoffBase: 0.01,
    backoffMax: backoffMax, totalTimeout: totalTimeout, userAgent: userAgent,
    transport: makeTransport(transport),
    retryBudget: .standard, environment: environment)
}

/// A new transport of `kind`; every kind in `Transport.availableKinds` exists in this build.
func makeTransport(_ kind: Transport.Kind) -> Transport {
  guard let transport = Transport.make(kind) else {
    preconditionFailure("\(kind) is listed as available but cannot be made")
  }
  return transport
}

/// A person the mock knows.
func knownPerson(_ server: MockServer, index: Int = 0) -> MockPerson {
  server.dataset.people[index % server.dataset.people.count]
}

/// A valid CPF the mock does not know.
func unknownCPF(_ server: MockServer) -> CPF {
  while true {
    let cpf = CPF.random()
    if server.dataset.person(for: cpf.digits) == nil { return cpf }
  }
}

/// `digits` with its last check digit changed, so it fails validation.
func wrongCheckDigit(_ digits: String) -> String {
  let last = Int(String(digits.last!))!
  return String(digits.dropLast()) + String((last + 1) % 10)
}

/// Runs `body` and returns the `CPFHubError` it throws; records an issue if it throws
/// something else or nothing.
func expectCPFHubError(
  sourceLocation: SourceLocation = #_sourceLocation,
  _ body: () async throws -> Person
) async -> CPFHubError? {
  do {
    let person = try await body()
    Issue.record("expected an error, got a person \(person.cpf)", sourceLocation: sourceLocation)
    return nil
  } catch let error as CPFHubError {
    return error
  } catch {
    Issue.record("expected CPFHubError, got \(error)", sourceLocation: sourceLocation)
    return nil
  }
}

/// Every textual form of a value a program might print or log.
func allStrings(of value: Any) -> [String] {
  var dumped = ""
  dump(value, to: &dumped)
  var strings = [String(describing: value), String(reflecting: value), dumped]
  for child in Mirror(reflecting: value).children {
    strings.append(String(describing: child.value))
    strings.append(String(reflecting: child.value))
  }
  if let error = value as? CPFHubError {
    strings.append(error.message)
    strings.append(error.errorDescription ?? "")
    strings.append(error.localizedDescription)
    strings.append(error.description)
    strings.append((error as NSError).localizedDescription)
  }
  return strings
}

/// The transport that sent `record`, told from the wire alone: Foundation's `URLSession` adds
/// `Accept-Language` to every request it sends, AsyncHTTPClient sends only the headers it is
/// given. A matrix test can so check that the transport it names is the one that talked.
func wireTransport(_ record: MockRequestRecord) -> Transport.Kind {
  record.headers["accept-language"] == nil ? .asyncHTTPClient : .urlSession
}
