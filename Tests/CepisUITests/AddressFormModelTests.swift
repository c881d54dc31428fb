#if canImport(Observation)
  import CepisTestSupport
  import BrazilianDocuments
  import Cepis
  import CepisMock
  import Foundation
  import Observation
  import Testing

  @testable import CepisUI

  @Suite("AddressFormModel against CepisMock")
  @MainActor
  struct AddressFormModelTests {
    static let debounce = Duration.milliseconds(300)

    /// A form on `client` whose debounce runs on `clock`.
    func makeForm(_ client: Client, _ clock: ManualClock) -> AddressFormModel {
      AddressFormModel(client: client, debounce: Self.debounce, clock: clock)
    }

    /// Types `text` into the CEP field one character at a time, as a bound text field does:
    /// each keystroke appends to what the field shows. Returns what it showed after each.
    @discardableResult
    func type(_ text: String, into form: AddressFormModel) -> [String] {
      var shown: [String] = []
      for character in text {
        form.cep = form.cep + String(character)
        shown.append(form.cep)
      }
      return shown
    }

    /// Waits until the lookup just started is sleeping out its debounce, ends the debounce,
    /// and waits for the lookup's answer to land.
    func settle(_ form: AddressFormModel, _ clock: ManualClock) async {
      await eventually { clock.sleeperCount == 1 }
      clock.advance(by: Self.debounce)
      await form.pendingLookup?.value
    }

    /// The mock's truth for `cep`.
    func truth(_ server: MockServer, _ cep: String) throws -> MockAddress {
      try #require(server.dataset.address(for: cep))
    }

    // MARK: - The CEP field

    struct Typed: Sendable, CustomTestStringConvertible {
      var input: String
      var shown: String
      var state: AddressFormModel.State
      var testDescription: String { "\"\(input)\"" }
    }

    nonisolated static let typedCases: [Typed] = [
      Typed(input: "", shown: "", state: .idle),
      Typed(input: "abc", shown: "", state: .idle),
      Typed(input: "0", shown: "0", state: .incomplete),
      Typed(input: "01001", shown: "01001", state: .incomplete),
      Typed(input: "010010", shown: "01001-0", state: .incomplete),
      Typed(input: "0100100", shown: "01001-00", state: .incomplete),
      Typed(input: "01001000", shown: "01001-000", state: .searching),
      Typed(input: "01001-000", shown: "01001-000", state: .searching),
      Typed(input: "01.001-000", shown: "01001-000", state: .searching),
      Typed(input: " CEP: 01001 000\n", shown: "01001-000", state: .searching),
      Typed(input: "0100100012345", shown: "01001-000", state: .searching),
      Typed(input: "٠١٠٠١٠٠٠", shown: "", state: .idle),
    ]

    @Test(arguments: typedCases) func cepIsFormattedAsSet(_ typed: Typed) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        form.cep = typed.input
        #expect(form.cep == typed.shown)
        #expect(form.state == typed.state)
        #expect(form.message == nil)
        if typed.state != .searching {
          // Fewer than 8 digits asks nothing, however long the customer waits.
          #expect(form.pendingLookup == nil)
          clock.advance(by: .seconds(60))
          try await Task.sleep(nanoseconds: 50_000_000)
          #expect(cepRequests(server).isEmpty)
        }
      }
    }

    @Test(arguments: testedTransportKinds) func oneRequestPerFinishedCEP(
      _ kind: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL, kind), clock)
        let shown = type("01001000", into: form)
        #expect(
          shown == [
            "0", "01", "010", "0100", "01001", "01001-0", "01001-00", "01001-000",
          ])
        // A text field writing the formatted value back starts nothing new.
        form.cep = form.cep
        form.cep = "01001-000"
        #expect(form.state == .searching)
        await settle(form, clock)

        let expected = try truth(server, "01001000")
        #expect(cepRequests(server).map(\.path) == ["/01001000"])
        guard case .found(let found) = form.state else {
          Issue.record("expected .found, got \(form.state)")
          return
        }
        #expect(found.cep == "01001000")
        #expect(form.logradouro == expected.logradouro)
        #expect(form.bairro == expected.bairro)
        #expect(form.localidade == expected.localidade)
        #expect(form.uf == expected.uf)
        #expect(form.complemento == expected.complemento)
        #expect(form.message == nil)

        // Writing the same CEP again after the answer asks nothing either.
        form.cep = "01001000"
        clock.advance(by: .seconds(60))
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(cepRequests(server).count == 1)
        #expect(form.state == .found(found))
      }
    }

    @Test(arguments: testedTransportKinds) func theClientsFallbacksFillTheFormWhileCepIsIsDown(
      _ kind: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        server.setMode(.cep, [.status(503)])
        let client = Client(
          baseURL: server.baseURL, timeout: 5, maxAttempts: 1, totalTimeout: 10,
          transport: try #require(Transport.make(kind)), retryBudget: nil,
          fallbacks: [.viaCEP(baseURL: server.baseURL)])
        let clock = ManualClock()
        let form = makeForm(client, clock)
        type("01001000", into: form)
        await settle(form, clock)

        let expected = try truth(server, "01001000")
        guard case .found(let found) = form.state else {
          Issue.record("expected .found from the fallback, got \(form.state)")
          return
        }
        #expect(found.source == .viaCEP)
        #expect(form.logradouro == expected.logradouro)
        #expect(form.bairro == expected.bairro)
        #expect(form.localidade == expected.localidade)
        #expect(form.uf == expected.uf)
        #expect(form.message == nil)
        #expect(cepRequests(server).count == 1)
        #expect(server.requests.filter { $0.route == .viaCEP }.count == 1)
      }
    }

    @Test func aCEPChangedWithinTheDebounceIsNeverAsked() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        form.cep = "20040020"
        #expect(form.uf == "RJ")
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .milliseconds(200))
        // Corrected before the debounce ran out: the first CEP is never asked.
        form.cep = "01001000"
        #expect(form.uf == "SP")
        await eventually { clock.sleeperCount == 1 }
        // The debounce counts from the last change, not the first.
        clock.advance(by: .milliseconds(200))
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(cepRequests(server).isEmpty)
        #expect(form.state == .searching)
        clock.advance(by: .milliseconds(100))
        await form.pendingLookup?.value

        #expect(cepRequests(server).map(\.path) == ["/01001000"])
        try #expect(form.localidade == truth(server, "01001000").localidade)
        #expect(form.uf == "SP")
      }
    }

    @Test(arguments: testedTransportKinds) func aStaleAnswerNeverLands(
      _ kind: Transport.Kind
    ) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL, kind), clock)
        // The first CEP's answer is slow.
        server.script(.cep, [.delayHeaders(2)])
        form.cep = "20040020"
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: Self.debounce)
        await eventually { cepRequests(server).count == 1 }
        let stale = try #require(form.pendingLookup)

        form.cep = "01001000"
        await settle(form, clock)
        let expected = try truth(server, "01001000")
        #expect(form.logradouro == expected.logradouro)

        // The old lookup was cancelled: its connection closed before the answer was sent.
        await eventually { cepRequests(server).first?.clientClosed == true }
        // Once its task has ended, nothing of it can land any more; nothing of it did.
        await stale.value
        guard case .found(let found) = form.state else {
          Issue.record("expected .found, got \(form.state)")
          return
        }
        #expect(found.cep == "01001000")
        #expect(form.cep == "01001-000")
        #expect(form.logradouro == expected.logradouro)
        #expect(form.bairro == expected.bairro)
        #expect(form.localidade == expected.localidade)
        #expect(form.uf == "SP")
        #expect(form.message == nil)
        #expect(cepRequests(server).map(\.path) == ["/20040020", "/01001000"])
      }
    }

    @Test func deletingADigitCancelsTheLookupInFlight() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        server.script(.cep, [.delayHeaders(2)])
        form.cep = "01001000"
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: Self.debounce)
        await eventually { cepRequests(server).count == 1 }
        let inFlight = try #require(form.pendingLookup)

        form.cep = "01001-00"
        #expect(form.state == .incomplete)
        #expect(form.pendingLookup == nil)
        await eventually { cepRequests(server).first?.clientClosed == true }
        await inFlight.value
        #expect(form.state == .incomplete)
        #expect(form.logradouro.isEmpty)
        #expect(form.message == nil)
      }
    }

    // MARK: - The fields

    @Test func theCustomersEditsAreKept() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        let first = try truth(server, "01001000")
        form.cep = "01001000"
        // While the lookup waits, the customer starts on the street and the complement.
        form.logradouro = "Rua do Cliente"
        form.complemento = "apto 12"
        form.numero = "100"
        await settle(form, clock)
        #expect(form.state == .found(try #require(expectedAddress(first))))
        #expect(form.logradouro == "Rua do Cliente")
        #expect(form.complemento == "apto 12")
        #expect(form.numero == "100")
        #expect(form.bairro == first.bairro)
        #expect(form.localidade == first.localidade)
        #expect(form.uf == first.uf)

        // A second CEP: fields the customer edited since it changed stay theirs; the rest
        // (their old edits included) take the new answer; the number is never touched.
        let second = try truth(server, "20040020")
        form.cep = "20040020"
        form.bairro = "Bairro do Cliente"
        await settle(form, clock)
        #expect(form.bairro == "Bairro do Cliente")
        #expect(form.logradouro == second.logradouro)
        #expect(form.localidade == second.localidade)
        #expect(form.uf == second.uf)
        #expect(form.complemento == "apto 12")
        #expect(form.numero == "100")
      }
    }

    @Test func theComplementIsFilledOnlyWhenEmpty() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        let first = try truth(server, "01001000")
        let second = try truth(server, "20040020")
        #expect(!first.complemento.isEmpty && first.complemento != second.complemento)
        form.cep = "01001000"
        await settle(form, clock)
        #expect(form.complemento == first.complemento)
        // The model's own complement is not the customer's: the next CEP replaces it.
        form.cep = "20040020"
        await settle(form, clock)
        #expect(form.complemento == second.complemento)

        // Written by the customer before the CEP, even: kept.
        let other = makeForm(makeCEPClient(server.baseURL), clock)
        other.complemento = "casa 2"
        other.logradouro = "Rua Digitada Antes"
        other.cep = "01001000"
        await settle(other, clock)
        #expect(other.complemento == "casa 2")
        // The street typed before the CEP changed is the CEP's to correct.
        #expect(other.logradouro == first.logradouro)
      }
    }

    @Test func aTownWideCEPDoesNotWipeTheStreetTheCustomerTyped() async throws {
      let town = MockAddress(
        cep: "13480000", logradouro: "", complemento: "", bairro: "", localidade: "Limeira",
        uf: "SP", ibge: "3526902")
      let configuration = MockServer.Configuration(dataset: MockDataset(addresses: [town]))
      try await MockServer.withServer(configuration) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        form.logradouro = "Rua das Flores"
        form.bairro = "Centro"
        form.cep = "13480-000"
        await settle(form, clock)
        #expect(form.localidade == "Limeira")
        #expect(form.uf == "SP")
        #expect(form.logradouro == "Rua das Flores")
        #expect(form.bairro == "Centro")
        form.numero = "7"
        #expect(form.address?.ibge == "3526902")
      }
    }

    @Test func anotherCEPClearsWhatTheModelFilledForTheFirst() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL, maxAttempts: 1), clock)
        form.cep = "01001000"
        await settle(form, clock)
        form.numero = "100"
        #expect(form.isComplete)

        // The next CEP cannot be looked up: no field may still show São Paulo's street.
        server.script(.cep, [.status(503)])
        form.cep = "20040020"
        #expect(form.logradouro.isEmpty)
        #expect(form.bairro.isEmpty)
        #expect(form.localidade.isEmpty)
        #expect(form.complemento.isEmpty)
        #expect(form.uf == "RJ")
        #expect(form.numero == "100")
        #expect(!form.isComplete)
        await settle(form, clock)
        #expect(failureKind(form.state) == "server_error")
        #expect(form.logradouro.isEmpty)
        #expect(!form.isComplete)
      }
    }

    // MARK: - Not found, offline, retry

    @Test func notFoundLeavesTheFieldsToTheCustomer() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        let cep = unknownCEP(server)
        form.cep = cep
        await settle(form, clock)
        #expect(form.state == .notFound)
        #expect(form.message == "CEP não encontrado. Confira o número ou preencha o endereço.")
        #expect(form.uf == "SP")
        #expect(!form.isComplete)
        form.logradouro = "Rua Nova"
        form.numero = "1"
        form.bairro = "Loteamento Novo"
        form.localidade = "Campinas"
        #expect(
          form.address
            == FilledAddress(
              cep: cep, logradouro: "Rua Nova", numero: "1", bairro: "Loteamento Novo",
              localidade: "Campinas", uf: .sp, ibge: nil))
      }
    }

    @Test func offlineSaysToCheckTheConnectionAndKeepsTheOfflineUF() async throws {
      let clock = ManualClock()
      let form = makeForm(makeCEPClient(try await closedPortURL()), clock)
      form.cep = "20040-020"
      // Before any answer could exist.
      #expect(form.uf == "RJ")
      #expect(form.state == .searching)
      await settle(form, clock)
      #expect(failureKind(form.state) == "network_error")
      #expect(
        form.message
          == "Não foi possível buscar o CEP. Verifique sua conexão ou preencha o endereço manualmente."
      )
      #expect(form.uf == "RJ")
      form.logradouro = "Avenida Rio Branco"
      form.numero = "1"
      form.bairro = "Centro"
      form.localidade = "Rio de Janeiro"
      #expect(form.address?.uf == .rj)
    }

    struct OfflineUF: Sendable, CustomTestStringConvertible {
      var cep: String
      var uf: String
      var testDescription: String { "\(cep) → \(uf.isEmpty ? "none" : uf)" }
    }

    nonisolated static let offlineUFs: [OfflineUF] = [
      OfflineUF(cep: "01001000", uf: "SP"), OfflineUF(cep: "20040020", uf: "RJ"),
      OfflineUF(cep: "70150900", uf: "DF"), OfflineUF(cep: "69900000", uf: "AC"),
      OfflineUF(cep: "77000000", uf: "TO"), OfflineUF(cep: "99999999", uf: "RS"),
      // No range holds these: the UF is left for the answer or the customer.
      OfflineUF(cep: "00500000", uf: ""), OfflineUF(cep: "78950000", uf: ""),
    ]

    @Test(arguments: offlineUFs) func ufIsSetOfflineAtOnce(_ expected: OfflineUF) async throws {
      let clock = ManualClock()
      let form = makeForm(makeCEPClient(try await closedPortURL()), clock)
      type(String(expected.cep.dropLast()), into: form)
      #expect(form.uf == "")
      type(String(expected.cep.suffix(1)), into: form)
      #expect(form.uf == expected.uf)
    }

    @Test func retryAsksAgainAtOnce() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL, maxAttempts: 2), clock)
        server.script(.cep, [.status(503), .status(503)])
        form.cep = "01001000"
        await settle(form, clock)
        #expect(failureKind(form.state) == "server_error")
        #expect(
          form.message
            == "A busca de CEP está indisponível no momento. Tente novamente ou preencha o endereço manualmente."
        )
        form.retry()
        #expect(form.state == .searching)
        #expect(form.message == nil)
        // No debounce: the clock is not advanced.
        await form.pendingLookup?.value
        try #expect(form.logradouro == truth(server, "01001000").logradouro)
        #expect(cepRequests(server).count == 3)

        // Nothing to retry without a complete CEP.
        form.cep = "0100"
        form.retry()
        #expect(form.state == .incomplete)
        #expect(form.pendingLookup == nil)
      }
    }

    @Test func aFormThatIsGoneAsksNothing() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        var form: AddressFormModel? = makeForm(makeCEPClient(server.baseURL), clock)
        form?.cep = "01001000"
        await eventually { clock.sleeperCount == 1 }
        form = nil
        await eventually { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(1))
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(cepRequests(server).isEmpty)
      }
    }

    // MARK: - What the screen and the submit button rely on

    @Test func observersOfStateAndCEPAreNotified() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        let cepChanged = Flag()
        withObservationTracking {
          _ = form.cep
        } onChange: {
          cepChanged.set()
        }
        let searching = Flag()
        withObservationTracking {
          _ = form.state
        } onChange: {
          searching.set()
        }
        form.cep = "01001000"
        #expect(cepChanged.value)
        #expect(searching.value)

        let answered = Flag()
        let filled = Flag()
        withObservationTracking {
          _ = form.state
        } onChange: {
          answered.set()
        }
        withObservationTracking {
          _ = form.logradouro
        } onChange: {
          filled.set()
        }
        #expect(!answered.value)
        await settle(form, clock)
        #expect(answered.value)
        #expect(filled.value)
        guard case .found = form.state else {
          Issue.record("expected .found, got \(form.state)")
          return
        }
      }
    }

    @Test func addressIsTheValueToSubmit() async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let clock = ManualClock()
        let form = makeForm(makeCEPClient(server.baseURL), clock)
        let truth = try truth(server, "01001000")
        form.cep = "01001000"
        #expect(form.address == nil)
        await settle(form, clock)
        #expect(!form.isComplete)  // no number yet
        form.numero = "  100 "
        #expect(form.isComplete)
        #expect(
          form.address
            == FilledAddress(
              cep: "01001000", logradouro: truth.logradouro, numero: "100",
              complemento: truth.complemento, bairro: truth.bairro, localidade: truth.localidade,
              uf: .sp, ibge: truth.ibge))
        #expect(form.address?.formattedCEP == "01001-000")

        form.uf = "sp"
        #expect(form.address?.uf == .sp)
        // A UF the CEP's range contradicts, or none at all, cannot be submitted.
        form.uf = "RJ"
        #expect(!form.isComplete)
        form.uf = "XX"
        #expect(!form.isComplete)
        form.uf = "SP"
        // A city typed by hand carries no IBGE code of another city.
        form.localidade = "Osasco"
        #expect(form.address?.ibge == nil)
        form.localidade = truth.localidade
        form.bairro = " "
        #expect(!form.isComplete)
        form.bairro = truth.bairro

        // While another CEP is being looked up, nothing is submitted.
        form.cep = "01310100"
        #expect(form.state == .searching)
        form.logradouro = "Avenida Paulista"
        form.bairro = "Bela Vista"
        form.localidade = "São Paulo"
        #expect(!form.isComplete)
        form.cep = "0131"
        #expect(!form.isComplete)
      }
    }

    /// The client's `Address` for the mock's truth, as the single endpoint returns it.
    func expectedAddress(_ truth: MockAddress) -> Address? {
      Address(
        cep: truth.cep, logradouro: truth.logradouro, complemento: truth.complemento,
        bairro: truth.bairro, localidade: truth.localidade, uf: truth.uf, ibge: truth.ibge,
        geo: truth.geo.map { Geo(lat: $0.lat, lon: $0.lon, raioM: $0.raioM, precisao: $0.precisao) }
      )
    }
  }
#endif
