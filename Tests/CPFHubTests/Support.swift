import BrazilianDocuments
import CPFHub
import CepisMock
import CepisTestSupport
import Foundation
import Testing

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
