#if AsyncHTTPClient
  import CepisTestSupport
  import AsyncHTTPClient
  import CepisMock
  import Foundation
  import Testing

  @testable import Cepis

  /// A caller's own `HTTPClient`: used as it is, never shut down, its redirect settings ignored.
  @Suite("AsyncHTTPClient: the caller's HTTPClient")
  struct CallerHTTPClientTests {
    @Test("HTTPClient.shared, which follows redirects anywhere, still never leaves the origin")
    func sharedClientKeepsTheOrigin() async throws {
      try await withMockServer { server in
        let port = try #require(server.baseURL.port)
        server.script(.cep, [.redirect(status: 302, location: "http://localhost:\(port)/01001000")])
        let client = Client(
          baseURL: server.baseURL, timeout: 30, maxAttempts: 1,
          transport: .asyncHTTPClient(.shared))
        await #expect(throws: CepisError.self) { try await client.lookup("01001000") }
        #expect(requests(server, on: .cep).count == 1)
        // A same-origin redirect is followed by Cepis, as on every transport.
        server.script(.cep, [.redirect(status: 308, location: "/moved/01001000")])
        let address = try await client.lookup("01001000")
        #expect(address.cep == "01001000")
      }
    }

    @Test("on a caller's client: deadlines, the body cap and cancellation hold as everywhere")
    func callerClientKeepsTheContract() async throws {
      try await withMockServer { server in
        let client = Client(
          baseURL: server.baseURL, timeout: 60, maxAttempts: 1, totalTimeout: 3,
          transport: .asyncHTTPClient(.shared))
        // A body dribbled a byte every 50 ms would take about a minute: totalTimeout ends it.
        server.script(.cep, [.dribble(gap: 0.05)])
        let (_, dribbled) = await measure {
          await #expect(throws: CepisError.self) { try await client.lookup("01001000") }
        }
        // Loose: in a full parallel run, CPU-bound suites can hold the two cooperative threads
        // for seconds after the deadline resumes the caller.
        #expect(dribbled < 15, "took \(dribbled) s")
        #expect(dribbled >= 2.9, "took \(dribbled) s")
        // The other two parts are not about the deadline: they run on a client with a whole
        // minute for each call, so that a loaded machine cannot turn them into a timeout.
        let roomy = Client(
          baseURL: server.baseURL, timeout: 60, maxAttempts: 1, totalTimeout: 60,
          transport: .asyncHTTPClient(.shared))
        // A Content-Length over the cap is refused before the body is read.
        server.setMode(.cep, [.dribble(gap: 0.05)])
        server.script(.cep, [.oversizedBody(bytes: 64 << 20)])
        await #expect {
          try await roomy.lookup("01001000")
        } throws: { error in
          guard case .invalidResponse(let message) = error as? CepisError else { return false }
          return message.contains("larger than")
        }
        server.setMode(.cep, [])
        // Cancelling the calling task ends the call at once.
        server.script(.cep, [.delayHeaders(30)])
        let task = Task { try await roomy.lookup("01001000") }
        try await waitForRequests(server, on: .cep, count: 3)
        let start = Date()
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(Date().timeIntervalSince(start) < 5)
      }
    }

    @Test("a caller's HTTPClient outlives every Cepis client made on it")
    func callerClientIsNotShutDown() async throws {
      let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
      try await withMockServer { server in
        do {
          let client = Client(baseURL: server.baseURL, transport: .asyncHTTPClient(httpClient))
          _ = try await client.lookup("01001000")
        }
        // The Cepis client and its transport are gone; the caller's client still works.
        let again = Client(baseURL: server.baseURL, transport: .asyncHTTPClient(httpClient))
        _ = try await again.lookup("20040020")
      }
      // Shutting down twice would throw `alreadyShutdown`: this is the first shutdown.
      try await httpClient.shutdown()
    }

    @Test("an HTTPClient Cepis creates is shut down when its last client is released")
    func ownedClientIsShutDown() async throws {
      try await withMockServer { server in
        for _ in 0..<3 {
          // AsyncHTTPClient traps in debug builds when a client is released without a
          // shutdown: getting through this loop is the assertion.
          let client = Client(
            baseURL: server.baseURL,
            transport: .asyncHTTPClient(configuration: HTTPClient.Configuration()))
          _ = try await client.lookup("01001000")
        }
      }
    }
  }
#endif
