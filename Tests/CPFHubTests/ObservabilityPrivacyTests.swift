#if Observability
  import BrazilianDocuments
  import CPFHub
  import CepisHTTP
  import CepisMock
  import CepisTestSupport
  import Foundation
  import Testing

  /// Privacy in the three backends: every error path of the CPF client, a success and a
  /// cancelled call, with a logger at `trace`, metrics and a tracer recording everything;
  /// then every text they hold is searched for the key, the CPF and the person.
  @Suite("Observability: no key, CPF or name in any log, metric or span")
  struct ObservabilityPrivacyTests {
    @Test(arguments: testedTransportKinds)
    func nothingPersonalIsRecorded(transport: Transport.Kind) async throws {
      try await withMockServer(.acceptingTestKey) { server in
        let person = knownPerson(server)
        let cpf = try CPF(person.cpf)
        let backends = ObservabilityBackends()
        let errors = await SecretsTests().everyError(
          server, transport, person: person, observer: backends.observer)
        #expect(errors.count == 20)
        let client = makeClient(server, transport).observed(by: backends.observer)
        let found = try await client.lookup(cpf.formatted)
        #expect(found.name == person.name)
        server.script(.cpf, [.delayHeaders(10)])
        let call = Task { try await client.lookup(cpf.digits) }
        while !backends.messages.suffix(1).contains("attempt started") {
          try await Task.sleep(nanoseconds: 5_000_000)
        }
        call.cancel()
        _ = await call.result

        // Every path was recorded, failures included, in all three backends.
        #expect(backends.messages.filter { $0 == "call ended" }.count == 22)
        #expect(backends.tracer.finishedSpans.count == 22)
        #expect(backends.tracer.finishedSpans.allSatisfy { $0.operationName == "cpfhub.lookup" })
        let kinds = Set(
          backends.tracer.finishedSpans.compactMap { $0.attributes["error.type"] }.map { "\($0)" })
        #expect(kinds.count >= 9, "\(kinds)")
        #expect(backends.metrics.counters.count > 3)
        let forbidden = [
          testKey, cpf.digits, cpf.formatted, person.name, person.name.uppercased(),
          person.birthDate,
        ]
        let texts = backends.everything
        #expect(texts.count > 500)
        for text in texts {
          for secret in forbidden {
            #expect(!text.contains(secret), "a backend recorded \(secret) in: \(text)")
          }
        }
      }
    }
  }
#endif
