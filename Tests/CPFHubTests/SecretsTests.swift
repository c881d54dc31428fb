import BrazilianDocuments
import CPFHub
import CepisHTTP
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@Suite("The key, the CPF and the person never leak")
struct SecretsTests {
  /// Every error the client can throw, produced for real against the mock (or locally).
  /// With `observer`, every client listens to it (the observability privacy tests).
  func everyError(
    _ server: MockServer, _ transport: Transport.Kind, person: MockPerson,
    observer: (any ClientEventObserver)? = nil
  ) async -> [CPFHubError] {
    var errors: [CPFHubError] = []
    func run(_ client: CPFClient, _ cpf: String, _ faults: [MockFault] = []) async {
      let client = observer.map { client.observed(by: $0) } ?? client
      if !faults.isEmpty { server.script(.cpf, faults) }
      if let error = await expectCPFHubError({ try await client.lookup(cpf) }) {
        errors.append(error)
      }
    }
    let client = makeClient(server, transport)
    let cpf = person.cpf
    await run(client, wrongCheckDigit(cpf))
    await run(client, "390.533.447-0")
    await run(client, "390.533.x47-05")
    await run(makeClient(server, transport, apiKey: nil), cpf)
    await run(makeClient(server, transport, baseURL: URL(string: "http://example.com")!), cpf)
    await run(makeClient(server, transport, apiKey: testKey + "x"), cpf)
    await run(client, cpf, [.status(403, body: #"{"error":"key \#(testKey) forbidden"}"#)])
    await run(client, unknownCPF(server).digits)
    await run(client, cpf, [.successFalse])
    await run(client, cpf, [.status(400, body: "bad cpf \(cpf)")])
    await run(client, cpf, Array(repeating: .status(429, retryAfter: "0"), count: 3))
    await run(client, cpf, Array(repeating: .status(503, body: "down \(testKey)"), count: 3))
    // A fresh client: libcurl silently retries a reset on a reused keep-alive connection.
    await run(makeClient(server, transport), cpf, Array(repeating: .resetBeforeHeaders, count: 3))
    await run(client, cpf, Array(repeating: .truncatedBody, count: 3))
    await run(
      makeClient(server, transport, timeout: 0.15, maxAttempts: 1), cpf, [.delayHeaders(0.4)])
    await run(client, cpf, [.htmlPortal])
    await run(client, cpf, [.wrongShapeJSON])
    await run(client, cpf, [.status(418, body: "<html>\(person.name) \(cpf)</html>")])
    let echo =
      #"{"success":true,"data":{"cpf":"\#(cpf)","name":"\#(person.name)","birthDate":"99/99/1990"}}"#
    await run(client, cpf, [.status(200, body: echo)])
    await run(client, cpf, [.oversizedBody(bytes: 2 << 20)])
    return errors
  }

  @Test(arguments: testedTransportKinds)
  func noErrorRevealsTheKeyTheCPFOrThePerson(transport: Transport.Kind) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let person = knownPerson(server)
      let cpf = try CPF(person.cpf)
      let errors = await everyError(server, transport, person: person)
      #expect(errors.count == 20)
      // Every case of the enum is covered.
      let kinds = Set(errors.map { String(describing: $0).prefix(while: { $0 != ":" }) })
      #expect(kinds.count >= 9)
      let forbidden = [
        testKey, cpf.digits, cpf.formatted, person.name, person.name.uppercased(),
        person.birthDate,
      ]
      for error in errors {
        for text in allStrings(of: error) {
          for secret in forbidden {
            #expect(!text.contains(secret), "\(error.message) leaks in: \(text)")
          }
        }
      }
    }
  }

  @Test(arguments: testedTransportKinds) func theClientNeverPrintsItsKey(
    transport: Transport.Kind
  ) {
    let client = makeClient(nil, transport, userAgent: "my-app/1.0")
    let strings = allStrings(of: client) + [client.description, client.debugDescription]
    for text in strings {
      #expect(!text.contains(testKey))
    }
    #expect(client.description.contains("apiKey: <redacted>"))
    var dumped = ""
    dump(client, to: &dumped)
    #expect(dumped.contains("<redacted>"))
    #expect(
      Mirror(reflecting: client).children.contains { child in
        child.label == "apiKey" && (child.value as? String) == "<redacted>"
      })
    #expect(makeClient(nil, transport, apiKey: nil).description.contains("apiKey: <none>"))
  }

  @Test(arguments: testedTransportKinds) func theKeyTravelsOnlyInItsHeader(
    transport: Transport.Kind
  ) async throws {
    try await withMockServer(.acceptingTestKey) { server in
      let person = knownPerson(server)
      _ = try await makeClient(server, transport).lookup(person.cpf)
      let request = try #require(server.requests.first)
      #expect(request.headers["x-api-key"] == testKey)
      #expect(!request.path.contains(testKey))
      #expect(request.query == nil)
      for (name, value) in request.headers where name != "x-api-key" {
        #expect(!value.contains(testKey), "\(name) carries the key")
      }
    }
  }
}
