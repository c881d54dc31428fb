import BrazilianDocuments
import CPFHub
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@Suite("CPFClient against CepisMock", .serialized)
struct EndToEndTests {
  @Test(arguments: testedTransportKinds)
  func theNamedTransportIsOnTheWire(transport: Transport.Kind) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let client = makeClient(server, transport)
      #expect(client.transport.kind == transport)
      _ = try await client.lookup(knownPerson(server).cpf)
      #expect(server.requests.map(wireTransport) == [transport])
    }
  }

  @Test(arguments: testedTransportKinds)
  func theKeyNeverFollowsARedirectToAnotherOrigin(transport: Transport.Kind) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let person = knownPerson(server)
      let port = try #require(server.baseURL.port)
      // The same server under another name: had the client followed, the log would show it.
      server.script(
        .cpf, [.redirect(status: 307, location: "http://localhost:\(port)/cpf/\(person.cpf)")])
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(person.cpf)
      }
      guard case .invalidResponse = error else {
        Issue.record("expected invalidResponse, got \(String(describing: error))")
        return
      }
      #expect(server.requests.count == 1)
      // Within the origin, the redirect is followed and the key goes along.
      server.clearLog()
      server.script(.cpf, [.redirect(status: 308, location: "/v1/cpf/\(person.cpf)")])
      // The second leg is sent from Swift's pool: a deadline a busy pool cannot reach.
      let found = try await makeClient(server, transport, timeout: 30).lookup(person.cpf)
      #expect(found.cpf.digits == person.cpf)
      #expect(server.requests.map(\.path) == ["/cpf/\(person.cpf)", "/v1/cpf/\(person.cpf)"])
      #expect(server.requests.allSatisfy { $0.headers["x-api-key"] == testKey })
    }
  }

  @Test(arguments: testedTransportKinds) func validCPFReturnsThePerson(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let expected = knownPerson(server)
      let person = try await makeClient(server, transport).lookup(expected.cpf)
      #expect(person.cpf.digits == expected.cpf)
      #expect(person.name == expected.name)
      #expect(person.nameUpper == expected.nameUpper)
      #expect(person.gender == expected.gender)
      #expect(person.birthDate == expected.birthDate)
      #expect(person.day == expected.day)
      #expect(person.month == expected.month)
      #expect(person.year == expected.year)
      #expect(person.birthDateComponents.year == expected.year)
      #expect(person.birthDateComponents.month == expected.month)
      #expect(person.birthDateComponents.day == expected.day)

      let requests = server.requests
      #expect(requests.count == 1)
      #expect(requests.first?.path == "/cpf/\(expected.cpf)")
      #expect(requests.first?.headers["x-api-key"] == testKey)
      #expect(requests.first?.headers["accept"] == "application/json")
      #expect(requests.first?.headers["user-agent"]?.hasPrefix("cpfhub-swift/") == true)
    }
  }

  @Test(arguments: testedTransportKinds) func formattedInputIsSentAsDigits(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let expected = knownPerson(server, index: 1)
      let formatted = try CPF(expected.cpf).formatted
      let person = try await makeClient(server, transport).lookup(" \(formatted) ")
      #expect(person.cpf.digits == expected.cpf)
      #expect(server.requests.map(\.path) == ["/cpf/\(expected.cpf)"])
    }
  }

  @Test(arguments: testedTransportKinds) func v1PathPrefix(transport: Transport.Kind)
    async throws
  {
    try await withMockServer(.acceptingTestKey) { server in
      let expected = knownPerson(server, index: 2)
      let person = try await makeClient(server, transport, pathPrefix: "/v1/cpf/").lookup(
        expected.cpf)
      #expect(person.name == expected.name)
      #expect(server.requests.map(\.path) == ["/v1/cpf/\(expected.cpf)"])
    }
  }

  @Test(arguments: testedTransportKinds)
  func wrongCheckDigitsFailLocallyWithZeroRequests(transport: Transport.Kind) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let digits = wrongCheckDigit(knownPerson(server).cpf)
      let error = await expectCPFHubError { try await makeClient(server, transport).lookup(digits) }
      guard case .invalidCPF(.checkDigitMismatch?) = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(error?.errorDescription == "CPF inválido. Confira os dígitos informados.")
      #expect(server.requests.isEmpty)
    }
  }

  @Test(
    arguments: testedTransportKinds,
    ["", "123", "123456789012", "abc.def.ghi-jk", "111.111.111-11"])
  func malformedCPFsFailLocallyWithZeroRequests(transport: Transport.Kind, _ input: String)
    async throws
  {
    try await withMockServer(.acceptingTestKey) { server in
      let error = await expectCPFHubError { try await makeClient(server, transport).lookup(input) }
      guard case .invalidCPF(let reason?) = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(reason.kind == .cpf)
      #expect(error?.isRetriable == false)
      #expect(server.requests.isEmpty)
    }
  }

  @Test(arguments: testedTransportKinds) func missingKeyFailsWithZeroRequests(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let person = knownPerson(server)
      for environment in [[:], ["CPFHUB_API_KEY": ""], ["CPFHUB_API_KEY": "  \n"]] {
        let client = makeClient(server, transport, apiKey: nil, environment: environment)
        #expect(!client.hasAPIKey)
        let error = await expectCPFHubError { try await client.lookup(person.cpf) }
        #expect(error == .missingAPIKey)
        #expect(error?.errorDescription == "Chave de API não configurada.")
      }
      #expect(server.requests.isEmpty)
    }
  }

  @Test(arguments: testedTransportKinds) func keyFallsBackToTheEnvironment(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let expected = knownPerson(server)
      let client = makeClient(
        server, transport, apiKey: nil, environment: ["CPFHUB_API_KEY": testKey])
      #expect(client.hasAPIKey)
      let person = try await client.lookup(expected.cpf)
      #expect(person.name == expected.name)
      #expect(server.requests.first?.headers["x-api-key"] == testKey)
    }
  }

  @Test(arguments: testedTransportKinds) func explicitKeyWinsOverTheEnvironment(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let client = makeClient(
        server, transport, apiKey: "wrong", environment: ["CPFHUB_API_KEY": testKey])
      let error = await expectCPFHubError { try await client.lookup(knownPerson(server).cpf) }
      #expect(error == .unauthorized(status: 401))
    }
  }

  @Test(arguments: testedTransportKinds) func wrongKeyIsUnauthorizedAndNotRetried(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let client = makeClient(server, transport, apiKey: "not-the-key")
      let error = await expectCPFHubError { try await client.lookup(knownPerson(server).cpf) }
      #expect(error == .unauthorized(status: 401))
      #expect(error?.isRetriable == false)
      #expect(server.requests.count == 1)
    }
  }

  @Test(arguments: testedTransportKinds) func forbiddenIsUnauthorized(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.status(403)])
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      #expect(error == .unauthorized(status: 403))
      #expect(server.requests.count == 1)
    }
  }

  @Test(arguments: testedTransportKinds) func unknownCPFIsNotFound(transport: Transport.Kind)
    async throws
  {
    try await withMockServer(.acceptingTestKey) { server in
      let cpf = unknownCPF(server)
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(cpf.digits)
      }
      #expect(error == .cpfNotFound(redactedCPF: cpf.redacted))
      #expect(error?.errorDescription == "CPF não encontrado na base de dados.")
      #expect(server.requests.count == 1)
    }
  }

  @Test(arguments: testedTransportKinds) func successFalseIsNotFound(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.successFalse])
      let person = knownPerson(server)
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(person.cpf)
      }
      let redacted = try CPF(person.cpf).redacted
      #expect(error == .cpfNotFound(redactedCPF: redacted))
      #expect(server.requests.count == 1)
    }
  }

  @Test(arguments: testedTransportKinds) func apiRejectionIsInvalidCPF(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.status(400)])
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      #expect(error == .invalidCPF(nil))
      #expect(server.requests.count == 1)
    }
  }

  @Test(arguments: testedTransportKinds) func rateLimitedThenSuccess(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.status(429, retryAfter: "1")])
      let expected = knownPerson(server)
      let person = try await makeClient(server, transport).lookup(expected.cpf)
      #expect(person.name == expected.name)
      #expect(server.requests.count == 2)
    }
  }

  @Test(arguments: testedTransportKinds) func retryAfterIsHonoured(transport: Transport.Kind)
    async throws
  {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.status(429, retryAfter: "1")])
      let start = Date()
      _ = try await makeClient(server, transport, backoffMax: 2).lookup(knownPerson(server).cpf)
      let elapsed = Date().timeIntervalSince(start)
      #expect(elapsed >= 0.9)
      // About a second; the bound is loose for a loaded machine.
      #expect(elapsed < 15)
    }
  }

  /// A status every attempt gets, and the retriable error it ends in.
  struct Exhausted: Sendable, CustomStringConvertible {
    let fault: MockFault
    let error: CPFHubError
    let description: String
  }

  static let exhausted = [
    Exhausted(
      fault: .status(429, retryAfter: "0"),
      error: .rateLimited(message: "rate limited (HTTP 429)", retryAfter: 0), description: "429"),
    Exhausted(
      fault: .status(503), error: .serverError(message: "HTTP 503", status: 503),
      description: "503"),
  ]

  @Test(
    "a retriable status on every attempt ends in its error after the three attempts",
    arguments: testedTransportKinds, exhausted)
  func retriesExhausted(transport: Transport.Kind, exhausted: Exhausted) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, Array(repeating: exhausted.fault, count: 3))
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      #expect(error == exhausted.error)
      #expect(error?.isRetriable == true)
      #expect(server.requests.count == 3)
    }
  }

  @Test(arguments: testedTransportKinds) func serverErrorThenSuccess(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.status(500), .status(502)])
      let expected = knownPerson(server)
      let person = try await makeClient(server, transport).lookup(expected.cpf)
      #expect(person.cpf.digits == expected.cpf)
      #expect(server.requests.count == 3)
    }
  }

  @Test(arguments: testedTransportKinds) func slowHeadersTimeOut(transport: Transport.Kind)
    async throws
  {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.delayHeaders(10), .delayHeaders(10)])
      let client = makeClient(server, transport, timeout: 0.2, maxAttempts: 2)
      let start = Date()
      let error = await expectCPFHubError { try await client.lookup(knownPerson(server).cpf) }
      guard case .networkError(let message) = error, message.contains("timeout") else {
        Issue.record("got \(String(describing: error))")
        return
      }
      // Two 0.2 s attempts against a 10 s delay: the deadline held if this is far below 10 s.
      #expect(Date().timeIntervalSince(start) < 5)
      #expect(error?.isRetriable == true)
      #expect(server.requests.count == 2)
    }
  }

  @Test(arguments: testedTransportKinds) func totalTimeoutIsEnforced(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.delayHeaders(10)])
      let client = makeClient(server, transport, timeout: 8, totalTimeout: 0.25)
      let start = Date()
      let error = await expectCPFHubError { try await client.lookup(knownPerson(server).cpf) }
      guard case .networkError(let message) = error, message.contains("timeout") else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(Date().timeIntervalSince(start) < 5)
    }
  }

  @Test(arguments: testedTransportKinds)
  func connectionResetIsANetworkErrorAfterRetries(transport: Transport.Kind) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, Array(repeating: .resetBeforeHeaders, count: 3))
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      guard case .networkError = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(error?.isRetriable == true)
    }
  }

  @Test(arguments: testedTransportKinds) func connectionRefusedIsANetworkError(
    transport: Transport.Kind
  ) async throws {
    // Port 1 (tcpmux) has no listener: a stopped mock's port could be reused at once by a
    // server that another test starts in parallel.
    let base = try #require(URL(string: "http://127.0.0.1:1"))
    let cpf = MockDataset.sample.people[0].cpf
    let error = await expectCPFHubError {
      try await makeClient(nil, transport, baseURL: base).lookup(cpf)
    }
    guard case .networkError = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
  }

  @Test(arguments: testedTransportKinds) func htmlPageIsAnInvalidResponse(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.htmlPortal])
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      guard case .invalidResponse = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(error?.isRetriable == false)
      #expect(server.requests.count == 1)
    }
  }

  @Test(arguments: testedTransportKinds) func wrongShapeJSONIsAnInvalidResponse(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.wrongShapeJSON])
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      guard case .invalidResponse = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
    }
  }

  @Test(arguments: testedTransportKinds) func answerForAnotherCPFIsAnInvalidResponse(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let other = knownPerson(server, index: 3)
      let body =
        #"{"success":true,"data":{"cpf":"\#(other.cpf)","name":"X","nameUpper":"X","#
        + #""gender":"M","birthDate":"01/02/1990","day":1,"month":2,"year":1990}}"#
      server.script(.cpf, [.status(200, body: body)])
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      #expect(error == .invalidResponse("the API answered for another CPF"))
    }
  }

  @Test(arguments: testedTransportKinds) func oversizedBodyIsAnInvalidResponse(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.oversizedBody(bytes: 2 << 20)])
      let error = await expectCPFHubError {
        try await makeClient(server, transport).lookup(knownPerson(server).cpf)
      }
      guard case .invalidResponse = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(server.requests.count == 1)
    }
  }

  @Test(
    arguments: testedTransportKinds,
    [
      "http://example.com", "http://0.0.0.0", "ftp://127.0.0.1", "http://10.0.0.1",
      "http://127.0.0.1.example.com", "http://[::2]", "http://localhost.example.com",
    ])
  func cleartextIsRefusedWithZeroRequests(transport: Transport.Kind, _ base: String) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      // Aim at the mock's port, so that a request that did go out would show in its log.
      let url = URL(string: "\(base):\(server.port)")!
      let error = await expectCPFHubError {
        try await makeClient(server, transport, baseURL: url).lookup(knownPerson(server).cpf)
      }
      guard case .insecureTransport = error else {
        Issue.record("got \(String(describing: error))")
        return
      }
      #expect(error?.errorDescription == "Conexão insegura recusada. A consulta exige HTTPS.")
      #expect(server.requests.isEmpty)
    }
  }

  @Test(arguments: testedTransportKinds) func loopbackNamesAreAllowedOverHTTP(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let expected = knownPerson(server)
      let url = URL(string: "http://localhost:\(server.port)")!
      let person = try await makeClient(server, transport, baseURL: url).lookup(expected.cpf)
      #expect(person.name == expected.name)
    }
  }

  @Test(arguments: testedTransportKinds) func cancellationEndsTheCallPromptly(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      server.script(.cpf, [.delayHeaders(10)])
      let client = makeClient(server, transport)
      let cpf = knownPerson(server).cpf
      let task = Task { try await client.lookup(cpf) }
      try await Task.sleep(nanoseconds: 100_000_000)
      let start = Date()
      task.cancel()
      let result = await task.result
      #expect(Date().timeIntervalSince(start) < 5)
      #expect(throws: CancellationError.self) { try result.get() }
    }
  }
}
