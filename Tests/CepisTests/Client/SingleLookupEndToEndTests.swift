import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("lookup against CepisMock")
struct SingleLookupEndToEndTests {
  @Test(
    "returns the server's address for a masked CEP, with geo, and sends the documented headers",
    arguments: testedTransportKinds)
  func success(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let address = try await fastClient(server, transport).lookup("01001-000")
      #expect(address == expectedAddress(server, "01001000"))
      #expect(address.logradouro.contains("Praça da Sé"))
      let sent = try #require(requests(server, on: .cep).first)
      #expect(sent.path.hasSuffix("/01001000"))
      #expect(sent.headers["user-agent"] == "cepis-swift/\(Client.version) (+https://cep.is)")
      #expect(sent.headers["accept"] == "application/json, text/csv;q=0.9, */*;q=0.1")
    }
  }

  @Test(
    "every sample address round-trips exactly, with and without geo",
    arguments: testedTransportKinds)
  func sampleAddresses(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fastClient(server, transport)
      let ceps = Array(server.dataset.sampleCEPs.prefix(60))
      #expect(ceps.count == 60)
      for cep in ceps {
        let answer = try await client.lookup(cep)
        #expect(answer == expectedAddress(server, cep))
      }
    }
  }

  @Test("a malformed CEP throws invalidCEP and sends nothing", arguments: testedTransportKinds)
  func malformedSendsNothing(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fastClient(server, transport)
      for bad in ["1234", "01001-00a", "01001000/../health", "٠١٠٠١٠٠٠"] {
        await #expect(throws: CepisError.self) { try await client.lookup(bad) }
      }
      #expect(server.requests.isEmpty)
    }
  }

  @Test("404 is cepNotFound and is not retried", arguments: testedTransportKinds)
  func notFound(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let missing = "00000001"
      #expect(server.dataset.address(for: missing) == nil)
      await #expect(throws: CepisError.cepNotFound(missing)) {
        try await fastClient(server, transport).lookup(missing)
      }
      #expect(requests(server, on: .cep).count == 1)
    }
  }

  @Test(
    "400 is invalidCEP carrying the API's mensagem, not retried",
    arguments: testedTransportKinds)
  func badRequest(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.status(400, body: #"{"mensagem":"CEP bloqueado para consulta"}"#)])
      await #expect(throws: CepisError.invalidCEP("CEP bloqueado para consulta")) {
        try await fastClient(server, transport).lookup("01001000")
      }
      #expect(requests(server, on: .cep).count == 1)
    }
  }

  @Test(
    "503, 503, then success: three attempts and the right address",
    arguments: testedTransportKinds)
  func retriesServerErrors(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.status(503), .status(503)])
      let address = try await fastClient(server, transport).lookup("01001000")
      #expect(address == expectedAddress(server, "01001000"))
      #expect(requests(server, on: .cep).count == 3)
    }
  }

  @Test(
    "503 on every attempt: serverError(503) after exactly maxAttempts requests",
    arguments: testedTransportKinds)
  func serverErrorExhausted(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, Array(repeating: .status(503), count: 10))
      await #expect {
        try await fastClient(server, transport, maxAttempts: 4).lookup("01001000")
      } throws: { error in
        guard case .serverError(_, 503) = error as? CepisError else { return false }
        return (error as? CepisError)?.isRetriable == true
      }
      #expect(requests(server, on: .cep).count == 4)
    }
  }

  @Test(
    "429 with Retry-After in seconds: the next attempt waits for it",
    arguments: testedTransportKinds)
  func retryAfterSeconds(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.status(429, retryAfter: "1")])
      let client = fastClient(server, transport, backoffMax: 5)
      _ = try await client.lookup("01001000")
      let log = requests(server, on: .cep)
      #expect(log.count == 2)
      let gap = log[1].arrival.timeIntervalSince(log[0].arrival)
      #expect(gap >= 0.95, "gap was \(gap)")
    }
  }

  @Test(
    "429 with Retry-After as an HTTP-date: the next attempt waits until then",
    arguments: testedTransportKinds)
  func retryAfterDate(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // Two seconds ahead, truncated to whole seconds as the format requires.
      let target = Date(
        timeIntervalSince1970: (Date().timeIntervalSince1970 + 2).rounded(.down))
      server.script(.cep, [.status(429, retryAfter: imfFixdate(target))])
      _ = try await fastClient(server, transport, backoffMax: 5).lookup("01001000")
      let log = requests(server, on: .cep)
      #expect(log.count == 2)
      // A loaded machine may only make the retry later, never earlier than the date.
      let early = target.timeIntervalSince(log[1].arrival)
      #expect(early < 0.05, "retried \(early) s before the Retry-After date")
    }
  }

  @Test("Retry-After: 3600 is capped by backoffMax", arguments: testedTransportKinds)
  func retryAfterCapped(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.status(503, retryAfter: "3600")])
      let (_, elapsed) = try await measure {
        try await fastClient(server, transport, backoffMax: 0.2).lookup("01001000")
      }
      #expect(requests(server, on: .cep).count == 2)
      #expect(elapsed < 10, "took \(elapsed) s")
    }
  }

  @Test(
    "429 on every attempt: rateLimited carrying the last Retry-After",
    arguments: testedTransportKinds)
  func rateLimitedExhausted(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, Array(repeating: .status(429, retryAfter: "0"), count: 5))
      await #expect {
        try await fastClient(server, transport, maxAttempts: 2).lookup("01001000")
      } throws: { error in
        guard case .rateLimited(_, let retryAfter) = error as? CepisError else { return false }
        return retryAfter == 0
      }
      #expect(requests(server, on: .cep).count == 2)
    }
  }

  @Test(
    "a reset connection is retried; reset on every attempt is networkError",
    arguments: testedTransportKinds)
  func reset(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.resetBeforeHeaders, .resetAfterHeaders])
      let answer = try await fastClient(server, transport).lookup("01001000")
      #expect(answer == expectedAddress(server, "01001000"))
      server.clearLog()
      server.script(.cep, Array(repeating: .resetBeforeHeaders, count: 3))
      await #expect {
        try await fastClient(server, transport).lookup("01001000")
      } throws: { error in
        guard case .networkError = error as? CepisError else { return false }
        return true
      }
      #expect(requests(server, on: .cep).count == 3)
    }
  }

  @Test(
    "a body shorter than its Content-Length is a network failure, retried",
    arguments: testedTransportKinds)
  func truncatedBody(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.truncatedBody])
      let answer = try await fastClient(server, transport).lookup("01001000")
      #expect(answer == expectedAddress(server, "01001000"))
      #expect(requests(server, on: .cep).count == 2)
      server.script(.cep, Array(repeating: .truncatedBody, count: 3))
      await #expect {
        try await fastClient(server, transport).lookup("01001000")
      } throws: { error in
        guard case .networkError = error as? CepisError else { return false }
        return true
      }
    }
  }

  @Test("slow headers: a sub-second timeout fires on time", arguments: testedTransportKinds)
  func slowHeaders(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // The upper bound is loose for a loaded machine; the answer would come far later.
      server.script(.cep, [.delayHeaders(60)])
      let client = fastClient(server, transport, timeout: 0.3, maxAttempts: 1)
      let (result, elapsed) = await measure {
        await #expect(throws: CepisError.self) { try await client.lookup("01001000") }
      }
      _ = result
      #expect(elapsed < 15, "took \(elapsed) s")
      #expect(elapsed >= 0.25, "took \(elapsed) s")
    }
  }

  @Test(
    "a sub-second timeout is not rounded down: a 0.1 s answer gets through 0.99 s",
    arguments: testedTransportKinds)
  func subSecondTimeoutAllowsAnswer(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // FoundationNetworking truncates timeouts to whole seconds (0.99 → 0); the core's own
      // deadline must not. A deadline rounded down fails every try. A loaded machine can
      // stall one try past 0.89 s of slack (CI starts every suite at once on two cores, and
      // once did), so up to three tries are made and one answer must come through; a try that
      // fails may fail only by its deadline.
      let client = fastClient(server, transport, timeout: 0.99, maxAttempts: 1)
      var answer: Address?
      var tries = 0
      while answer == nil, tries < 3 {
        tries += 1
        server.script(.cep, [.delayHeaders(0.1)])
        do {
          answer = try await client.lookup("01001000")
        } catch let error as CepisError {
          guard case .networkError(let message) = error, message.contains("attempt timeout")
          else {
            Issue.record("try \(tries) failed by something other than its deadline: \(error)")
            return
          }
        }
      }
      #expect(answer == expectedAddress(server, "01001000"), "no answer in \(tries) tries")
      #expect(requests(server, on: .cep).count <= tries, "maxAttempts 1: no try retried")
    }
  }

  @Test(
    "a body dribbled a byte at a time cannot outlive totalTimeout",
    arguments: testedTransportKinds)
  func dribbledBody(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, Array(repeating: .dribble(gap: 0.05), count: 5))
      let client = fastClient(server, transport, timeout: 30, maxAttempts: 3, totalTimeout: 1)
      let (_, elapsed) = await measure {
        await #expect {
          try await client.lookup("01001000")
        } throws: { error in
          guard case .networkError = error as? CepisError else { return false }
          return true
        }
      }
      // The body alone would take about 15 s per attempt, 45 s in all.
      #expect(elapsed < 15, "took \(elapsed) s")
      #expect(elapsed >= 0.9, "took \(elapsed) s")
    }
  }

  @Test(
    "an HTML captive portal with status 200 is invalidResponse, not retried",
    arguments: testedTransportKinds)
  func htmlPortal(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.htmlPortal])
      await #expect {
        try await fastClient(server, transport).lookup("01001000")
      } throws: { error in
        guard case .invalidResponse(let message) = error as? CepisError else { return false }
        return message.contains("HTML") && message.count < 300
      }
      #expect(requests(server, on: .cep).count == 1)
    }
  }

  @Test("JSON of the wrong shape is invalidResponse", arguments: testedTransportKinds)
  func wrongShape(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.wrongShapeJSON])
      await #expect {
        try await fastClient(server, transport).lookup("01001000")
      } throws: { error in
        guard case .invalidResponse = error as? CepisError else { return false }
        return true
      }
    }
  }

  @Test(
    "an oversized body is invalidResponse, never unbounded memory",
    arguments: testedTransportKinds)
  func oversized(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.oversizedBody(bytes: 64 << 20)])
      let (_, elapsed) = await measure {
        await #expect {
          try await fastClient(server, transport).lookup("01001000")
        } throws: { error in
          guard case .invalidResponse(let message) = error as? CepisError else { return false }
          return message.contains("larger than")
        }
      }
      #expect(elapsed < 10)
    }
  }

  @Test(
    "an endless chunked body ends in a typed error within the deadline",
    arguments: testedTransportKinds)
  func endlessChunked(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.endlessChunked])
      let client = fastClient(server, transport, timeout: 2, maxAttempts: 1)
      await #expect {
        try await client.lookup("01001000")
      } throws: { error in
        guard let error = error as? CepisError else { return false }
        switch error {
        case .invalidResponse, .networkError: return true
        default: return false
        }
      }
    }
  }

  @Test(
    "cancelling the task ends an in-flight request at once", arguments: testedTransportKinds)
  func cancelInFlight(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // The answer would take 30 s; the call must end long before (5 s leaves room for a
      // machine busy with the rest of the suite).
      server.script(.cep, [.delayHeaders(30)])
      let client = fastClient(server, transport, timeout: 60)
      let task = Task { try await client.lookup("01001000") }
      try await waitForRequests(server, on: .cep, count: 1)
      let start = Date()
      task.cancel()
      await #expect(throws: CancellationError.self) { try await task.value }
      #expect(Date().timeIntervalSince(start) < 5)
    }
  }

  @Test("cancelling the task ends a backoff sleep at once", arguments: testedTransportKinds)
  func cancelDuringBackoff(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.status(503, retryAfter: "30")])
      let client = fastClient(server, transport, backoffMax: 60)
      let task = Task { try await client.lookup("01001000") }
      try await waitForRequests(server, on: .cep, count: 1)
      try await Task.sleep(nanoseconds: 100_000_000)  // into the backoff sleep
      let start = Date()
      task.cancel()
      await #expect(throws: CancellationError.self) { try await task.value }
      #expect(Date().timeIntervalSince(start) < 5)
      #expect(requests(server, on: .cep).count == 1)
    }
  }

  @Test(
    "a refused connection is networkError after every attempt", arguments: testedTransportKinds)
  func refused(transport: Transport.Kind) async throws {
    // Port 1 (tcpmux) has no listener: a stopped mock's port could be reused at once by a
    // server that another test starts in parallel.
    let url = try #require(URL(string: "http://127.0.0.1:1"))
    let client = makeClient(transport, baseURL: url, maxAttempts: 2, backoffMax: 0.01)
    await #expect {
      try await client.lookup("01001000")
    } throws: { error in
      guard case .networkError = error as? CepisError else { return false }
      return true
    }
  }

  @Test(
    "trailing slashes are stripped and a path prefix is kept", arguments: testedTransportKinds)
  func baseURLShapes(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      for suffix in ["/", "///", "/api", "/api/"] {
        let base = try #require(URL(string: server.baseURL.absoluteString + suffix))
        let client = makeClient(transport, baseURL: base)
        let answer = try await client.lookup("01001000").cep
        #expect(answer == "01001000")
      }
      let paths = requests(server, on: .cep).map(\.path)
      #expect(paths == ["/01001000", "/01001000", "/api/01001000", "/api/01001000"])
    }
  }

  @Test(
    "health: ok, and degraded (503) arrives as a value without retries",
    arguments: testedTransportKinds)
  func health(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fastClient(server, transport)
      let ok = try await client.health()
      #expect(ok.ok)
      #expect(!ok.dne.isEmpty)
      server.setDegraded(true)
      let degraded = try await client.health()
      #expect(!degraded.ok)
      #expect(requests(server, on: .health).count == 2)
    }
  }
}
