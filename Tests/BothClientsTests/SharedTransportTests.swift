import CPFHub
import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking  // URLSession, for the seed's initializers
#endif

/// The key the mock accepts in these tests.
let key = "sk_test_both-clients"

/// Both clients in one program, as a server app that uses both has them: one `Transport` value
/// and one `RetryBudget` value serve both, and they mean what they say.
@Suite("one transport and one retry budget for both clients")
struct SharedTransportTests {
  /// The snippet of issue 17, verbatim: it must compile with nothing but `import Cepis` and
  /// `import CPFHub`, and hand both clients the same values.
  @Test("the issue's snippet compiles and both clients take the same values")
  func theSnippet() {
    let transport: Cepis.Transport = .default
    let budget: Cepis.RetryBudget = .standard
    let cep = Client(transport: transport, retryBudget: budget)
    let cpf = CPFClient(apiKey: key, transport: transport, retryBudget: budget)

    #expect(cep.transport.kind == Transport.availableKinds[0])
    #expect(cpf.transport.kind == cep.transport.kind)
    #expect(cep.retryBudget == budget)
    #expect(cpf.retryBudget == budget)
    // One type, whichever module names it.
    let named: CPFHub.Transport = transport
    #expect(named.kind == transport.kind)
    #expect(CPFHub.RetryBudget.standard == Cepis.RetryBudget.standard)
  }

  /// The seed's initializers keep compiling; they build a URLSession transport.
  @Test("Client(session:) and CPFClient(session:) still compile and use URLSession")
  func seedShapes() {
    let cep = Client(session: .shared)
    let cpf = CPFClient(apiKey: key, session: .shared)
    #expect(cep.transport.kind == .urlSession)
    #expect(cpf.transport.kind == .urlSession)
  }

  /// Shared on the wire: a CEP lookup and then a CPF lookup through one transport value travel
  /// on one keep-alive connection, which only one connection pool can do; two transports of
  /// the same kind open two.
  @Test(
    "one transport value is one connection pool for both clients",
    arguments: testedTransportKinds)
  func oneConnectionPool(kind: Transport.Kind) async throws {
    try await MockServer.withServer(.init(cpfAPIKeys: [key])) { server in
      let person = try #require(server.dataset.people.first)

      let shared = try #require(Transport.make(kind))
      let cep = Client(baseURL: server.baseURL, maxAttempts: 1, transport: shared)
      let cpf = CPFClient(
        apiKey: key, baseURL: server.baseURL, maxAttempts: 1, transport: shared)
      #expect(try await cep.lookup("01001000").cep == "01001000")
      try await waitForOpenConnections(server, 1)
      #expect(try await cpf.lookup(person.cpf).name == person.name)
      #expect(server.openConnections == 1)
      #expect(server.requests.count == 2)
    }
  }

  /// The control of the test above: two transport values are two pools, two connections, so
  /// a count of one there is not an accident of the server.
  @Test("two transport values are two connection pools", arguments: [Transport.Kind.urlSession])
  func twoConnectionPools(kind: Transport.Kind) async throws {
    try await MockServer.withServer(.init(cpfAPIKeys: [key])) { server in
      let person = try #require(server.dataset.people.first)
      let cep = Client(
        baseURL: server.baseURL, maxAttempts: 1, transport: try #require(Transport.make(kind)))
      let cpf = CPFClient(
        apiKey: key, baseURL: server.baseURL, maxAttempts: 1,
        transport: try #require(Transport.make(kind)))
      _ = try await cep.lookup("01001000")
      try await waitForOpenConnections(server, 1)
      _ = try await cpf.lookup(person.cpf)
      try await waitForOpenConnections(server, 2)
    }
  }

  /// The process-wide AsyncHTTPClient: two `Transport.default` values, made apart, still share
  /// one `HTTPClient`, so a CEP client and a CPF client made in different places of an app
  /// share its connections.
  @Test(
    "every default AsyncHTTPClient transport is one process-wide client",
    arguments: testedTransportKinds.filter { $0 == .asyncHTTPClient })
  func processWideClient(kind: Transport.Kind) async throws {
    try await MockServer.withServer(.init(cpfAPIKeys: [key])) { server in
      let person = try #require(server.dataset.people.first)
      let cep = Client(baseURL: server.baseURL, maxAttempts: 1, transport: .default)
      let cpf = CPFClient(
        apiKey: key, baseURL: server.baseURL, maxAttempts: 1,
        transport: try #require(Transport.make(kind)))
      #expect(cep.transport.kind == kind)
      _ = try await cep.lookup("01001000")
      try await waitForOpenConnections(server, 1)
      _ = try await cpf.lookup(person.cpf)
      #expect(server.openConnections == 1)
    }
  }

  /// Waits (up to 5 s) until the server holds `count` open connections.
  func waitForOpenConnections(_ server: MockServer, _ count: Int) async throws {
    let deadline = Date().addingTimeInterval(5)
    while server.openConnections != count {
      guard Date() < deadline else {
        Issue.record("\(server.openConnections) connections open, expected \(count)")
        return
      }
      try await Task.sleep(nanoseconds: 10_000_000)
    }
  }
}
