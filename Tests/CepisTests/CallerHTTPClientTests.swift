#if AsyncHTTPClient
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
          baseURL: server.baseURL, maxAttempts: 1, transport: .asyncHTTPClient(.shared))
        await #expect(throws: CepisError.self) { try await client.lookup("01001000") }
        #expect(requests(server, on: .cep).count == 1)
        // A same-origin redirect is followed by Cepis, as on every transport.
        server.script(.cep, [.redirect(status: 308, location: "/moved/01001000")])
        let address = try await client.lookup("01001000")
        #expect(address.cep == "01001000")
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
