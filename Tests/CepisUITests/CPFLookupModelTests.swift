#if canImport(Observation)
  import CepisTestSupport
  import BrazilianDocuments
  import CPFHub
  import CepisMock
  import CepisUI
  import Foundation
  import Observation
  import Testing

  @Suite("CPFLookupModel against CepisMock")
  @MainActor
  struct CPFLookupModelTests {
    @Test(arguments: testedTransportKinds) func successShowsThePerson(
      transport: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let expected = knownPerson(server)
        let model = CPFLookupModel(client: makeClient(server, transport), input: expected.cpf)
        #expect(!model.isLoading)
        await model.lookup()
        #expect(model.person?.cpf.digits == expected.cpf)
        #expect(model.person?.name == expected.name)
        #expect(model.person?.birthDate == expected.birthDate)
        #expect(model.errorMessage == nil)
        #expect(model.error == nil)
        #expect(!model.isLoading)
      }
    }

    @Test(arguments: testedTransportKinds) func loadingFlagIsSetWhileTheLookupRuns(
      transport: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        server.script(.cpf, [.delayHeaders(0.2)])
        let model = CPFLookupModel(
          client: makeClient(server, transport), input: knownPerson(server).cpf)
        let task: Task<Void, Never> = model.lookup()
        #expect(model.isLoading)
        #expect(model.person == nil)
        await task.value
        #expect(!model.isLoading)
        #expect(model.person != nil)
      }
    }

    @Test(arguments: testedTransportKinds) func observersAreNotified(
      transport: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let model = CPFLookupModel(
          client: makeClient(server, transport), input: knownPerson(server).cpf)
        let changed = Flag()
        withObservationTracking {
          _ = model.person
        } onChange: {
          changed.set()
        }
        await model.lookup()
        #expect(changed.value)
      }
    }

    /// One scenario per error the screen can show.
    struct Scenario: Sendable, CustomTestStringConvertible {
      var name: String
      var input: @Sendable (MockServer) -> String
      var faults: [MockFault] = []
      var apiKey: String? = testKey
      var baseURL: URL?
      var timeout: TimeInterval = 2
      var message: String
      var testDescription: String { name }
    }

    /// A refused connection and an expired deadline are one case, `networkError`, with one
    /// sentence.
    nonisolated static let networkMessage =
      "Não foi possível falar com o serviço a tempo. Verifique sua conexão com a internet e tente novamente."

    nonisolated static let scenarios: [Scenario] = [
      Scenario(
        name: "length", input: { _ in "123.456" },
        message: "CPF inválido. Informe 11 dígitos numéricos."),
      Scenario(
        name: "check digits", input: { wrongCheckDigit(knownPerson($0).cpf) },
        message: "CPF inválido. Confira os dígitos informados."),
      Scenario(
        name: "missing key", input: { knownPerson($0).cpf }, apiKey: nil,
        message: "Chave de API não configurada."),
      Scenario(
        name: "wrong key", input: { knownPerson($0).cpf }, apiKey: "nope",
        message: "Chave de API inválida ou sem permissão de acesso."),
      Scenario(
        name: "not found", input: { unknownCPF($0).digits },
        message: "CPF não encontrado na base de dados."),
      Scenario(
        name: "success false", input: { knownPerson($0).cpf }, faults: [.successFalse],
        message: "CPF não encontrado na base de dados."),
      Scenario(
        name: "rate limited", input: { knownPerson($0).cpf },
        faults: Array(repeating: .status(429, retryAfter: "0"), count: 3),
        message: "Muitas consultas em pouco tempo. Aguarde alguns instantes e tente novamente."),
      Scenario(
        name: "server error", input: { knownPerson($0).cpf },
        faults: Array(repeating: .status(503), count: 3),
        message:
          "O serviço de consulta está indisponível no momento. Tente novamente mais tarde."),
      Scenario(
        name: "network", input: { knownPerson($0).cpf },
        faults: Array(repeating: .resetBeforeHeaders, count: 3),
        message: networkMessage),
      Scenario(
        name: "timeout", input: { knownPerson($0).cpf },
        faults: Array(repeating: .delayHeaders(0.5), count: 3), timeout: 0.1,
        message: networkMessage),
      Scenario(
        name: "html page", input: { knownPerson($0).cpf }, faults: [.htmlPortal],
        message: "Resposta inesperada do serviço de consulta. Tente novamente mais tarde."),
      Scenario(
        name: "cleartext", input: { knownPerson($0).cpf },
        baseURL: URL(string: "http://example.com"),
        message: "Conexão insegura recusada. A consulta exige HTTPS."),
    ]

    @Test(arguments: testedTransportKinds, scenarios)
    func errorsShowTheirPortugueseMessage(transport: Transport.Kind, _ scenario: Scenario)
      async throws
    {
      try await withMockServer(.acceptingTestKey) { server in
        if !scenario.faults.isEmpty { server.script(.cpf, scenario.faults) }
        let client = makeClient(
          server, transport, apiKey: scenario.apiKey, baseURL: scenario.baseURL,
          timeout: scenario.timeout,
          maxAttempts: scenario.timeout < 1 ? 2 : 3)
        let model = CPFLookupModel(client: client, input: scenario.input(server))
        await model.lookup()
        #expect(model.errorMessage == scenario.message)
        #expect(model.error?.errorDescription == scenario.message)
        #expect(model.person == nil)
        #expect(!model.isLoading)
      }
    }

    @Test(arguments: testedTransportKinds) func errorIsClearedByTheNextSuccess(
      transport: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let model = CPFLookupModel(client: makeClient(server, transport), input: "1")
        await model.lookup()
        #expect(model.errorMessage != nil)
        model.input = knownPerson(server).cpf
        await model.lookup()
        #expect(model.errorMessage == nil)
        #expect(model.person != nil)
      }
    }

    @Test(arguments: testedTransportKinds) func aNewLookupCancelsTheStaleOne(
      transport: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let first = knownPerson(server, index: 0)
        let second = knownPerson(server, index: 1)
        server.script(.cpf, [.delayHeaders(10)])
        let model = CPFLookupModel(client: makeClient(server, transport), input: first.cpf)
        let stale: Task<Void, Never> = model.lookup()
        // Wait until the slow request has reached the server, so the delay is really its own.
        for _ in 0..<1_000 where server.requests.isEmpty {
          try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(server.requests.count == 1)

        model.input = second.cpf
        let start = Date()
        await model.lookup()
        #expect(model.person?.cpf.digits == second.cpf)
        // Far less than the stale request's 10 s: the new lookup did not wait for it.
        #expect(Date().timeIntervalSince(start) < 5)

        await stale.value
        // Give a late answer every chance to land: it must not.
        try await Task.sleep(nanoseconds: 600_000_000)
        #expect(model.person?.cpf.digits == second.cpf)
        #expect(model.person?.name == second.name)
        #expect(model.errorMessage == nil)
        #expect(!model.isLoading)
        #expect(server.requests.map(\.path).contains("/cpf/\(first.cpf)"))
      }
    }

    @Test(arguments: testedTransportKinds) func cancelStopsTheLookup(
      transport: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        server.script(.cpf, [.delayHeaders(0.5)])
        let model = CPFLookupModel(
          client: makeClient(server, transport), input: knownPerson(server).cpf)
        let task: Task<Void, Never> = model.lookup()
        model.cancel()
        #expect(!model.isLoading)
        await task.value
        #expect(model.person == nil)
        #expect(model.errorMessage == nil)
      }
    }
  }
#endif
