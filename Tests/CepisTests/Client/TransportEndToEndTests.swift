import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// What the transport seam must not change: redirects, the early size check and connection
/// failures behave the same on every transport.
@Suite("transport behaviours against CepisMock")
struct TransportEndToEndTests {
  @Test(
    "the transport a test names is the one that talks to the server",
    arguments: testedTransportKinds)
  func theNamedTransportIsOnTheWire(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fastClient(server, transport)
      #expect(client.transport.kind == transport)
      _ = try await client.lookup("01001000")
      _ = try await client.lookupMany(["01001000", "20040002"])
      _ = try await client.health()
      #expect(server.requests.count == 3)
      #expect(server.requests.map(wireTransport) == Array(repeating: transport, count: 3))
    }
  }

  @Test(
    "a same-origin redirect is followed, within the attempt", arguments: testedTransportKinds)
  func sameOriginRedirect(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, [.redirect(status: 301, location: "/moved/01001000")])
      // The second leg is sent from Swift's pool: a deadline generous enough that a pool busy
      // with other tests (the suite's first seconds on two cores) cannot end the attempt.
      let address = try await fastClient(server, transport, timeout: 30, maxAttempts: 1)
        .lookup("01001000")
      #expect(address == expectedAddress(server, "01001000"))
      #expect(requests(server, on: .cep).map(\.path) == ["/01001000", "/moved/01001000"])
    }
  }

  @Test(
    "a redirect to another origin or to another scheme is never followed",
    arguments: testedTransportKinds, ["localhost", "https"])
  func crossOriginRedirect(transport: Transport.Kind, change: String) async throws {
    try await withMockServer { server in
      let port = try #require(server.baseURL.port)
      // The same server under another name (or scheme): following it would show in the log.
      let location =
        change == "https"
        ? "https://127.0.0.1:\(port)/01001000" : "http://localhost:\(port)/01001000"
      server.script(.cep, [.redirect(status: 302, location: location)])
      await #expect {
        try await fastClient(server, transport).lookup("01001000")
      } throws: { error in
        guard case .invalidResponse(let message) = error as? CepisError else { return false }
        return message.contains("302")
      }
      #expect(requests(server, on: .cep).count == 1)
    }
  }

  @Test(
    "a redirect loop, or a sixth redirect, is invalidResponse and is not retried",
    arguments: testedTransportKinds)
  func redirectLoop(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      func expectLoop() async {
        await #expect {
          try await fastClient(server, transport, timeout: 30).lookup("01001000")
        } throws: { error in
          guard case .invalidResponse(let message) = error as? CepisError else { return false }
          return message.contains("loop")
        }
      }
      server.script(.cep, [.redirect(status: 307, location: "/01001000")])
      await expectLoop()
      #expect(requests(server, on: .cep).count == 1)

      server.clearLog()
      server.script(.cep, (1...6).map { .redirect(status: 302, location: "/\($0)/01001000") })
      await expectLoop()
      #expect(requests(server, on: .cep).count == 6)  // the request and five redirects
    }
  }

  @Test(
    "a Content-Length over the cap is refused as soon as the headers arrive",
    arguments: testedTransportKinds)
  func earlyContentLengthRejection(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // The body would dribble a byte every 50 ms: reading up to the cap would take 50 s.
      server.setMode(.cep, [.dribble(gap: 0.05)])
      server.script(.cep, [.oversizedBody(bytes: 64 << 20)])
      let (_, elapsed) = await measure {
        await #expect {
          try await fastClient(server, transport, timeout: 30).lookup("01001000")
        } throws: { error in
          guard case .invalidResponse(let message) = error as? CepisError else { return false }
          return message.contains("larger than \(Client.maxBodyBytes) bytes")
        }
      }
      #expect(elapsed < 10, "took \(elapsed) s")
      #expect(requests(server, on: .cep).count == 1)  // never retried
    }
  }

  @Test("a TLS handshake that fails is networkError", arguments: testedTransportKinds)
  func tlsFailure(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      // The mock speaks plain HTTP: a TLS ClientHello gets no TLS answer.
      let port = try #require(server.baseURL.port)
      let url = try #require(URL(string: "https://127.0.0.1:\(port)"))
      // Far sooner than the attempt timeout (the bound is loose for a loaded machine).
      let client = makeClient(transport, baseURL: url, timeout: 60, maxAttempts: 1)
      let (_, elapsed) = await measure {
        await #expect {
          try await client.lookup("01001000")
        } throws: { error in
          guard case .networkError = error as? CepisError else { return false }
          return true
        }
      }
      #expect(elapsed < 15, "took \(elapsed) s")
    }
  }

  @Test("an unknown host is networkError saying so", arguments: testedTransportKinds)
  func unknownHost(transport: Transport.Kind) async throws {
    // `.invalid` is reserved (RFC 2606): no resolver answers it, online or not.
    let url = try #require(URL(string: "http://cepis-test.invalid"))
    let client = makeClient(transport, baseURL: url, maxAttempts: 1)
    await #expect {
      try await client.lookup("01001000")
    } throws: { error in
      guard case .networkError(let message) = error as? CepisError else { return false }
      return message == "host not found"
    }
  }
}
