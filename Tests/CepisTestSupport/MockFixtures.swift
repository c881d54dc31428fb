import BrazilianDocuments
import CepisHTTP
import CepisMock
import Foundation

/// The cpfhub.io key the mock accepts in tests (``MockServer/Configuration/acceptingTestKey``):
/// distinctive, so that a leak into an error, a log or output is easy to find.
public let testKey = "sk_test_9f8e7d6c5b4a-SECRET"

extension MockServer.Configuration {
  /// The default configuration, but cpfhub.io's routes accept ``testKey``.
  public static var acceptingTestKey: Self { .init(cpfAPIKeys: [testKey]) }
}

/// Starts a CepisMock server on 127.0.0.1 (port 0), runs `body`, and always stops it.
public func withMockServer<T>(
  _ configuration: MockServer.Configuration = .init(),
  isolation: isolated (any Actor)? = #isolation,
  _ body: (MockServer) async throws -> T
) async throws -> T {
  try await MockServer.withServer(configuration, isolation: isolation, body)
}

/// A new transport of `kind`; every kind in `Transport.availableKinds` exists in this build.
public func makeTransport(_ kind: Transport.Kind) -> Transport {
  guard let transport = Transport.make(kind) else {
    preconditionFailure("\(kind) is listed as available but cannot be made")
  }
  return transport
}

/// The transport that sent `record`, told from the wire alone: Foundation's `URLSession` adds
/// `Accept-Language` to every request it sends, AsyncHTTPClient sends only the headers it is
/// given. A matrix test can so check that the transport it names is the one that talked.
public func wireTransport(_ record: MockRequestRecord) -> Transport.Kind {
  record.headers["accept-language"] == nil ? .asyncHTTPClient : .urlSession
}

/// The requests the server logged on one route.
public func requests(_ server: MockServer, on route: MockRoute) -> [MockRequestRecord] {
  server.requests.filter { $0.route == route }
}

/// A person the mock knows.
public func knownPerson(_ server: MockServer, index: Int = 0) -> MockPerson {
  server.dataset.people[index % server.dataset.people.count]
}

/// A valid CPF the mock does not know.
public func unknownCPF(_ server: MockServer) -> CPF {
  while true {
    let cpf = CPF.random()
    if server.dataset.person(for: cpf.digits) == nil { return cpf }
  }
}

/// `digits` with its last check digit changed, so that it fails validation.
public func wrongCheckDigit(_ digits: String) -> String {
  guard let last = digits.last?.wholeNumberValue else { return digits + "0" }
  return String(digits.dropLast()) + String((last + 1) % 10)
}
