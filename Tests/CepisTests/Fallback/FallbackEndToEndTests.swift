import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// The fallback tests' client: ``fallbackClient(_:baseURL:timeout:maxAttempts:backoffBase:backoffMax:totalTimeout:retryBudget:fallbacks:hedgeAfter:environment:)``
/// with two attempts unless told otherwise.
func fallbackClient(
  _ transport: Transport.Kind,
  baseURL: URL,
  fallbacks: [Fallback],
  hedgeAfter: TimeInterval? = nil,
  timeout: TimeInterval = 5,
  maxAttempts: Int = 2,
  totalTimeout: TimeInterval? = nil
) -> Client {
  makeClient(
    transport, baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts,
    totalTimeout: totalTimeout, fallbacks: fallbacks, hedgeAfter: hedgeAfter)
}

/// ViaCEP and BrasilAPI as CepisMock serves them: on the cep.is mock's own port, with no
/// budget (the budgets' own tests are `FallbackBudgetTests`).
func viaCEP(_ server: MockServer) -> Fallback {
  .viaCEP(baseURL: server.baseURL, budget: .unlimited)
}
func brasilAPI(_ server: MockServer) -> Fallback {
  .brasilAPI(baseURL: server.baseURL, budget: .unlimited)
}

/// What ViaCEP's answer for `cep` maps to: the DNE fields, no coordinates.
func expectedViaCEP(_ server: MockServer, _ cep: String) -> Address? {
  guard let truth = server.dataset.address(for: cep) else { return nil }
  return Address(
    cep: truth.cep, logradouro: truth.logradouro, complemento: truth.complemento,
    bairro: truth.bairro, localidade: truth.localidade, uf: truth.uf, ibge: truth.ibge,
    geo: nil, source: .viaCEP)
}

/// What BrasilAPI's answer for `cep` maps to: no complemento or ibge; the point, when there
/// is one, of unknown precision.
func expectedBrasilAPI(_ server: MockServer, _ cep: String) -> Address? {
  guard let truth = server.dataset.address(for: cep) else { return nil }
  return Address(
    cep: truth.cep, logradouro: truth.logradouro, complemento: "", bairro: truth.bairro,
    localidade: truth.localidade, uf: truth.uf, ibge: "",
    geo: truth.geo.map { Geo(lat: $0.lat, lon: $0.lon, raioM: 0, precisao: "") },
    source: .brasilAPI)
}

/// Waits (up to 10 s) until the log shows the client closed a connection on `route`.
func waitForClientClose(_ server: MockServer, on route: MockRoute) async throws {
  let deadline = Date().addingTimeInterval(10)
  while !requests(server, on: route).contains(where: \.clientClosed) {
    guard Date() < deadline else {
      throw CepisError.networkError(message: "the \(route) connection was never closed")
    }
    try await Task.sleep(nanoseconds: 10_000_000)
  }
}

/// The error a client without fallbacks throws in the same situation.
func errorWithoutFallbacks(
  _ server: MockServer, _ transport: Transport.Kind, _ cep: String, maxAttempts: Int = 2
) async
  -> CepisError?
{
  do {
    _ = try await fallbackClient(
      transport, baseURL: server.baseURL, fallbacks: [], maxAttempts: maxAttempts
    )
    .lookup(cep)
    return nil
  } catch {
    return error as? CepisError
  }
}

@Suite("lookup with fallbacks and hedging, against CepisMock")
struct FallbackEndToEndTests {
  // MARK: When fallbacks are asked

  @Test(
    "cep.is answers: its address, source cepis, and no fallback is asked",
    arguments: testedTransportKinds)
  func cepisAnswers(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      let address = try await client.lookup("01001-000")
      #expect(address == expectedAddress(server, "01001000"))
      #expect(address.source == .cepis)
      #expect(requests(server, on: .viaCEP).isEmpty)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }

  @Test(
    "cep.is ends without an answer: the first fallback answers, the second is never asked",
    arguments: testedTransportKinds,
    [
      MockFault.status(503), .status(500), .status(429, retryAfter: "0"), .resetBeforeHeaders,
      .truncatedBody,
    ])
  func eligibleFailures(transport: Transport.Kind, fault: MockFault) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [fault])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      let address = try await client.lookup("20040020")
      #expect(address == expectedViaCEP(server, "20040020"))
      #expect(requests(server, on: .cep).count == 2)  // cep.is keeps its retries
      #expect(requests(server, on: .viaCEP).count == 1)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }

  @Test("a cep.is attempt timeout leads to the fallback", arguments: testedTransportKinds)
  func timeoutIsEligible(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)], maxAttempts: 1)
      let (address, elapsed) = try await measure { try await client.lookup("01001000") }
      #expect(address.source == .viaCEP)
      #expect(elapsed >= 4.9, "took \(elapsed) s")  // the 5 s attempt timeout, then ViaCEP
      #expect(elapsed < 20, "took \(elapsed) s")
    }
  }

  @Test(
    "fallbacks go in order, one attempt each: ViaCEP fails, BrasilAPI answers",
    arguments: testedTransportKinds)
  func order(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      server.setMode(.viaCEP, [.status(503)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      let address = try await client.lookup("01001000")
      #expect(address == expectedBrasilAPI(server, "01001000"))
      #expect(address.source == .brasilAPI)
      let routes = server.requests.compactMap(\.route)
      #expect(routes == [.cep, .cep, .viaCEP, .brasilAPI])

      // The other order is honoured just the same.
      server.clearLog()
      server.setMode(.viaCEP, [])
      server.setMode(.brasilAPI, [.status(503)])
      let reversed = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [brasilAPI(server), viaCEP(server)])
      #expect(try await reversed.lookup("01001000").source == .viaCEP)
      #expect(server.requests.compactMap(\.route) == [.cep, .cep, .brasilAPI, .viaCEP])
    }
  }

  @Test(
    "cep.is says not found: cepNotFound, and no fallback receives a request",
    arguments: testedTransportKinds)
  func neverAfterNotFound(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      // 10000009 does not exist at cep.is; ViaCEP and BrasilAPI would say so too, so only
      // the log can show whether they were asked.
      await #expect(throws: CepisError.cepNotFound("10000009")) {
        try await client.lookup("10000009")
      }
      #expect(requests(server, on: .cep).count == 1)
      #expect(requests(server, on: .viaCEP).isEmpty)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }

  @Test(
    "a malformed CEP, a 400 and an invalid response never reach a fallback",
    arguments: testedTransportKinds)
  func neverForInvalid(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      await #expect(throws: CepisError.self) { try await client.lookup("1234") }
      #expect(server.requests.isEmpty)

      server.script(.cep, [.status(400, body: #"{"mensagem":"CEP bloqueado"}"#)])
      await #expect(throws: CepisError.invalidCEP("CEP bloqueado")) {
        try await client.lookup("01001000")
      }
      server.script(.cep, [.htmlPortal])
      await #expect {
        try await client.lookup("01001000")
      } throws: { error in
        guard case .invalidResponse = error as? CepisError else { return false }
        return true
      }
      #expect(requests(server, on: .viaCEP).isEmpty)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }

  @Test(
    "a fallback request carries the client's User-Agent and asks for JSON",
    arguments: testedTransportKinds)
  func fallbackHeaders(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      _ = try await fallbackClient(transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)])
        .lookup("01001000")
      let sent = try #require(requests(server, on: .viaCEP).first)
      #expect(sent.path == "/ws/01001000/json/")
      #expect(sent.headers["user-agent"] == "cepis-swift/\(Client.version) (+https://cep.is)")
      #expect(sent.headers["accept"] == "application/json")
    }
  }

  @Test(
    "a fallback base URL keeps its path prefix and loses trailing slashes",
    arguments: testedTransportKinds)
  func fallbackBaseURLShapes(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      let prefixed = try #require(URL(string: server.baseURL.absoluteString + "/proxy//"))
      let client = fallbackClient(
        transport, baseURL: server.baseURL,
        fallbacks: [.brasilAPI(baseURL: prefixed), .viaCEP(baseURL: prefixed)])
      server.script(.brasilAPI, [.status(503)])
      #expect(try await client.lookup("01001000").source == .viaCEP)
      #expect(requests(server, on: .brasilAPI).map(\.path) == ["/proxy/api/cep/v2/01001000"])
      #expect(requests(server, on: .viaCEP).map(\.path) == ["/proxy/ws/01001000/json/"])
    }
  }

  // MARK: What fallbacks answer

  @Test(
    "ViaCEP's answer is mapped field by field, with no coordinates",
    arguments: testedTransportKinds)
  func viaCEPShape(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      let client = fallbackClient(transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)])
      for cep in server.dataset.sampleCEPs.prefix(20) {
        let address = try await client.lookup(cep)
        #expect(address == expectedViaCEP(server, cep))
        #expect(address.geo == nil)
      }
    }
  }

  @Test(
    "BrasilAPI's answer is mapped, its string coordinates parsed, precision unknown",
    arguments: testedTransportKinds)
  func brasilAPIShape(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [brasilAPI(server)])
      var withPoint = 0
      var withoutPoint = 0
      // Explicit sample addresses and synthetic ones (a third of which have no point).
      for cep in Array(server.dataset.sampleCEPs.prefix(10)) + ["10000000", "10000001", "10000002"]
      {
        let address = try await client.lookup(cep)
        #expect(address == expectedBrasilAPI(server, cep))
        #expect(address.ibge == "")
        #expect(address.complemento == "")
        if let geo = address.geo {
          withPoint += 1
          #expect(!geo.isPrecise)
        } else {
          withoutPoint += 1
        }
      }
      #expect(withPoint > 0)
      #expect(withoutPoint > 0)
    }
  }

  @Test(
    "BrasilAPI coordinates as empty strings give no geo, not a failure",
    arguments: testedTransportKinds)
  func brasilAPIEmptyCoordinates(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      server.script(
        .brasilAPI,
        [
          .status(
            200,
            body: #"{"cep":"01001000","state":"SP","city":"São Paulo","neighborhood":"Sé","#
              + #""street":"Praça da Sé","service":"viacep","location":{"type":"Point","#
              + #""coordinates":{"longitude":"","latitude":""}}}"#)
        ])
      let address = try await fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [brasilAPI(server)]
      )
      .lookup("01001000")
      #expect(address.source == .brasilAPI)
      #expect(address.geo == nil)
      #expect(address.logradouro == "Praça da Sé")
    }
  }

  @Test(
    "ViaCEP's erro, as a string and as a boolean, is cepNotFound; nothing more is asked",
    arguments: testedTransportKinds, [false, true])
  func viaCEPNotFound(transport: Transport.Kind, booleanErro: Bool) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      if booleanErro { server.script(.viaCEP, [.viaCEPBooleanErro]) }
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      await #expect(throws: CepisError.cepNotFound("10000009")) {
        try await client.lookup("10000009")
      }
      #expect(server.faultCounts["viaCEPBooleanErro"] == (booleanErro ? 1 : nil))
      #expect(requests(server, on: .viaCEP).count == 1)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }

  @Test(
    "BrasilAPI's 404 whose every error says not found is cepNotFound",
    arguments: testedTransportKinds)
  func brasilAPINotFound(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [brasilAPI(server), viaCEP(server)])
      await #expect(throws: CepisError.cepNotFound("10000009")) {
        try await client.lookup("10000009")
      }
      #expect(requests(server, on: .viaCEP).isEmpty)
    }
  }

  @Test(
    "BrasilAPI's outage 404 and its invalid-json 500 are skipped like failures",
    arguments: testedTransportKinds, [MockFault.brasilAPIOutage, .brasilAPIInvalidJSON])
  func brasilAPIFailures(transport: Transport.Kind, fault: MockFault) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      server.setMode(.brasilAPI, [fault])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [brasilAPI(server), viaCEP(server)])
      // 01001000 exists: the outage must not turn into "not found".
      #expect(try await client.lookup("01001000") == expectedViaCEP(server, "01001000"))
      #expect(requests(server, on: .brasilAPI).count == 1)

      // Alone, BrasilAPI's failure leaves cep.is's own error.
      let alone = fallbackClient(transport, baseURL: server.baseURL, fallbacks: [brasilAPI(server)])
      let expected = try #require(await errorWithoutFallbacks(server, transport, "01001000"))
      await #expect(throws: expected) { try await alone.lookup("01001000") }
    }
  }

  @Test(
    "an answer for another CEP, of another shape or not JSON is skipped",
    arguments: testedTransportKinds,
    [
      MockFault.status(
        200,
        body: #"{"cep":"20040-002","logradouro":"Rua","complemento":"","bairro":"Centro","#
          + #""localidade":"Rio de Janeiro","uf":"RJ","ibge":"3304557"}"#),
      .wrongShapeJSON, .htmlPortal, .status(200, body: "{}"), .invalidUTF8,
      .status(404, body: #"{"erro":"true"}"#),
    ])
  func badFallbackAnswersSkipped(transport: Transport.Kind, fault: MockFault) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      server.script(.viaCEP, [fault])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      let address = try await client.lookup("01001000")
      #expect(address == expectedBrasilAPI(server, "01001000"))
      #expect(requests(server, on: .viaCEP).count == 1)
    }
  }

  @Test(
    "every source fails: the error is cep.is's own, as without fallbacks",
    arguments: testedTransportKinds)
  func allFail(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // A body cut short: a network failure that libcurl does not retry on its own (it
      // silently retries a request whose reused connection dies before any byte comes back).
      server.setMode(.viaCEP, [.truncatedBody])
      server.setMode(.brasilAPI, [.brasilAPIInvalidJSON])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)])
      for fault in [MockFault.status(503), .status(429, retryAfter: "0"), .resetBeforeHeaders] {
        server.setMode(.cep, [fault])
        let expected = try #require(await errorWithoutFallbacks(server, transport, "01001000"))
        #expect(expected.isRetriable)
        server.clearLog()
        await #expect {
          try await client.lookup("01001000")
        } throws: { error in
          guard let error = error as? CepisError else { return false }
          // A reset's wording comes from the platform; statuses carry cep.is's own body.
          return fault == .resetBeforeHeaders ? error.kind == expected.kind : error == expected
        }
        // No retries at the fallbacks: one request each.
        #expect(requests(server, on: .viaCEP).count == 1)
        #expect(requests(server, on: .brasilAPI).count == 1)
      }
    }
  }

  // MARK: Hedging

  @Test(
    "hedging: a slow cep.is loses to ViaCEP, and its connection is closed",
    arguments: testedTransportKinds)
  func hedgingWins(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)],
        hedgeAfter: 0.2, timeout: 60)
      let start = Date()
      let (address, elapsed) = try await measure { try await client.lookup("01001000") }
      #expect(address == expectedViaCEP(server, "01001000"))
      #expect(elapsed < 20, "took \(elapsed) s; cep.is was answering after 30 s")
      try await waitForClientClose(server, on: .cep)
      let via = try #require(requests(server, on: .viaCEP).first)
      // ViaCEP was asked only once the hedge delay had passed.
      #expect(via.arrival.timeIntervalSince(start) >= 0.19)
      #expect(!via.clientClosed)
      #expect(requests(server, on: .cep).count == 1)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }

  @Test(
    "hedging: cep.is answering first wins, and the fallback's connection is closed",
    arguments: testedTransportKinds)
  func hedgingCepisWins(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // cep.is answers after 10 s: time enough, even on a loaded machine whose URLSession
      // work stalls for seconds, for the hedged request to reach the server before it loses.
      server.script(.cep, [.delayHeaders(10)])
      server.script(.viaCEP, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)], hedgeAfter: 0.1,
        timeout: 60)
      let (address, elapsed) = try await measure { try await client.lookup("01001000") }
      #expect(address == expectedAddress(server, "01001000"))
      #expect(address.source == .cepis)
      #expect(elapsed < 20, "took \(elapsed) s")
      try await waitForClientClose(server, on: .viaCEP)
      #expect(requests(server, on: .cep).first?.clientClosed == false)
    }
  }

  /// Who answers "not found" first in a hedged lookup, and who is then left in flight.
  enum NotFoundRace: String, CaseIterable, CustomStringConvertible, Sendable {
    /// cep.is answers after 10 s, ViaCEP would after 30 s.
    case cepisFirst
    /// cep.is would answer after 30 s; ViaCEP answers at once.
    case fallbackFirst
    var description: String { rawValue }
    var cepDelay: Double { self == .cepisFirst ? 10 : 30 }
    var viaCEPDelay: Double? { self == .cepisFirst ? 30 : nil }
    /// The route whose request must be cancelled.
    var loser: MockRoute { self == .cepisFirst ? .viaCEP : .cep }
  }

  @Test(
    "hedging: the first 'not found' wins, and the other request in flight is cancelled",
    arguments: testedTransportKinds, NotFoundRace.allCases)
  func hedgingNotFoundFirst(transport: Transport.Kind, race: NotFoundRace) async throws {
    try await withMockServer { server in
      server.script(.cep, [.delayHeaders(race.cepDelay)])
      if let delay = race.viaCEPDelay { server.script(.viaCEP, [.delayHeaders(delay)]) }
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)], hedgeAfter: 0.1,
        timeout: 60)
      let (_, elapsed) = await measure {
        await #expect(throws: CepisError.cepNotFound("10000009")) {
          try await client.lookup("10000009")
        }
      }
      #expect(elapsed < 20, "took \(elapsed) s")
      try await waitForClientClose(server, on: race.loser)
    }
  }

  @Test(
    "hedging: a failed hedge waits for cep.is; only the first fallback is hedged",
    arguments: testedTransportKinds)
  func hedgeFailsThenCepisAnswers(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.delayHeaders(10)])
      server.script(.viaCEP, [.status(503)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)],
        hedgeAfter: 0.1, timeout: 60)
      let address = try await client.lookup("01001000")
      #expect(address.source == .cepis)
      #expect(requests(server, on: .viaCEP).count == 1)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }

  @Test("hedging: a fast cep.is never starts the fallback", arguments: testedTransportKinds)
  func hedgeNotNeeded(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)], hedgeAfter: 3)
      for _ in 0..<3 { #expect(try await client.lookup("01001000").source == .cepis) }
      try await Task.sleep(nanoseconds: 3_300_000_000)  // past the hedge delay
      #expect(requests(server, on: .viaCEP).isEmpty)
    }
  }

  @Test(
    "hedging: when cep.is then fails, the next fallbacks follow in order",
    arguments: testedTransportKinds)
  func hedgeThenChain(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.delayHeaders(2), .status(503)])
      server.script(.viaCEP, [.status(503)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)],
        hedgeAfter: 0.05, timeout: 60, maxAttempts: 1)
      // cep.is: one attempt, 503 after 2 s; ViaCEP (hedged) 503; then BrasilAPI.
      let start = Date()
      let address = try await client.lookup("01001000")
      #expect(address.source == .brasilAPI)
      #expect(requests(server, on: .cep).count == 1)
      let providers = server.requests.compactMap(\.route).filter(\.isFallbackProvider)
      #expect(providers == [.viaCEP, .brasilAPI])
      // BrasilAPI waited for cep.is's failure, which cannot come before 2 s.
      let brasil = try #require(requests(server, on: .brasilAPI).first)
      #expect(brasil.arrival.timeIntervalSince(start) >= 1.99)
    }
  }

  // MARK: Deadlines and cancellation

  @Test(
    "fallbacks get what is left of totalTimeout, not a deadline of their own",
    arguments: testedTransportKinds)
  func totalTimeoutAcrossSources(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // cep.is fails after 1 s; both fallbacks would hang for 30 s.
      server.setMode(.cep, [.delayHeaders(1), .status(503)])
      server.setMode(.viaCEP, [.delayHeaders(30)])
      server.setMode(.brasilAPI, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)],
        timeout: 30,
        maxAttempts: 1, totalTimeout: 4)
      let (_, elapsed) = await measure {
        await #expect {
          try await client.lookup("01001000")
        } throws: { error in
          // cep.is's own error, not a fallback's timeout.
          guard case .serverError(_, 503) = error as? CepisError else { return false }
          return true
        }
      }
      // Without fallbacks the call would end after about 1 s; a fallback with its own 30 s
      // timeout would keep it 30 s. It ends at the 4 s deadline.
      #expect(elapsed >= 3.9, "took \(elapsed) s")
      #expect(elapsed < 15, "took \(elapsed) s")
      #expect(requests(server, on: .viaCEP).count <= 1)
      #expect(requests(server, on: .brasilAPI).count <= 1)
    }
  }

  @Test(
    "a fallback that fails in time leaves the rest of the deadline to the next one",
    arguments: testedTransportKinds)
  func deadlineSharedAlongTheChain(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      server.setMode(.viaCEP, [.delayHeaders(1), .status(503)])
      server.setMode(.brasilAPI, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)],
        timeout: 30,
        maxAttempts: 1, totalTimeout: 4)
      let start = Date()
      await #expect {
        try await client.lookup("01001000")
      } throws: { error in
        guard case .serverError(_, 503) = error as? CepisError else { return false }
        return true
      }
      let elapsed = Date().timeIntervalSince(start)
      #expect(elapsed >= 3.9, "took \(elapsed) s")
      #expect(elapsed < 15, "took \(elapsed) s")
      // Ending at the deadline, not after ViaCEP's 503 at about 1 s, shows BrasilAPI was
      // given the rest; if its request got out (a loaded machine may hold it back), it was
      // only after ViaCEP's failure.
      #expect(requests(server, on: .brasilAPI).count <= 1)
      for brasil in requests(server, on: .brasilAPI) {
        #expect(brasil.arrival.timeIntervalSince(start) >= 0.99)
      }
    }
  }

  @Test(
    "totalTimeout spent by cep.is leaves no time: no fallback, cep.is's timeout error",
    arguments: testedTransportKinds)
  func noTimeLeft(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)], timeout: 30,
        maxAttempts: 1,
        totalTimeout: 0.5)
      let (_, elapsed) = await measure {
        await #expect {
          try await client.lookup("01001000")
        } throws: { error in
          guard case .networkError(let message) = error as? CepisError else { return false }
          return message.contains("total timeout")
        }
      }
      #expect(elapsed < 15, "took \(elapsed) s")
      #expect(requests(server, on: .viaCEP).isEmpty)
    }
  }

  @Test(
    "with hedging, totalTimeout still bounds the whole lookup", arguments: testedTransportKinds)
  func hedgedTotalTimeout(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.delayHeaders(30)])
      server.setMode(.viaCEP, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)], hedgeAfter: 0.1,
        timeout: 30,
        maxAttempts: 1, totalTimeout: 3)
      let (_, elapsed) = await measure {
        await #expect {
          try await client.lookup("01001000")
        } throws: { error in
          guard case .networkError(let message) = error as? CepisError else { return false }
          return message.contains("total timeout")
        }
      }
      #expect(elapsed >= 2.9, "took \(elapsed) s")
      #expect(elapsed < 15, "took \(elapsed) s")
      #expect(requests(server, on: .viaCEP).count <= 1)
    }
  }

  @Test(
    "cancelling a hedged lookup ends it at once and closes both connections",
    arguments: testedTransportKinds)
  func cancelHedged(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.delayHeaders(30)])
      server.setMode(.viaCEP, [.delayHeaders(30)])
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server)], hedgeAfter: 0.05,
        timeout: 60)
      let task = Task { try await client.lookup("01001000") }
      try await waitForRequests(server, on: .cep, count: 1)
      try await waitForRequests(server, on: .viaCEP, count: 1)
      let start = Date()
      task.cancel()
      await #expect(throws: CancellationError.self) { try await task.value }
      #expect(Date().timeIntervalSince(start) < 10)  // never the 30 s of the answers
      try await waitForClientClose(server, on: .cep)
      try await waitForClientClose(server, on: .viaCEP)
    }
  }

  // MARK: Batch

  @Test(
    "lookupMany never uses fallbacks, and its addresses come from cep.is",
    arguments: testedTransportKinds)
  func batchIgnoresFallbacks(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [viaCEP(server), brasilAPI(server)],
        hedgeAfter: 0)
      let found = try await client.lookupMany(["01001000", "20040020", "10000009"])
      #expect(found.compactMap { $0 }.map(\.source) == [.cepis, .cepis])
      server.setMode(.csv, [.status(503)])
      await #expect {
        try await client.lookupMany(["01001000"])
      } throws: { error in
        guard case .serverError = error as? CepisError else { return false }
        return true
      }
      #expect(requests(server, on: .viaCEP).isEmpty)
      #expect(requests(server, on: .brasilAPI).isEmpty)
    }
  }
}
