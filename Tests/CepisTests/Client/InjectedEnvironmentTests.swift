import CepisHTTP
import CepisMock
import CepisSupport
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// The retry loop's waits, observed through an injected sleeper, random source and clock:
/// the arithmetic is checked exactly, against real responses, without sleeping.
@Suite("Retry waits with an injected clock and random source")
struct InjectedEnvironmentTests {
  final class Recorder: Sendable {
    let waits = LockedValue<[TimeInterval]>([])
  }

  func client(
    _ server: MockServer, _ transport: Transport.Kind, recorder: Recorder,
    backoffMax: TimeInterval
  ) -> Client {
    let environment = HTTPEnvironment(
      sleep: { seconds in recorder.waits.withLock { $0.append(seconds) } },
      random: { 0.5 },
      now: { Date(timeIntervalSince1970: 784_111_777) }  // Sun, 06 Nov 1994 08:49:37 GMT
    )
    return makeClient(
      transport, baseURL: server.baseURL, maxAttempts: 4, backoffBase: 1, backoffMax: backoffMax,
      retryBudget: nil, environment: environment)
  }

  @Test(
    "full jitter: half of each doubling window when the draw is 0.5, capped at backoffMax",
    arguments: testedTransportKinds)
  func jitter(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = Recorder()
      server.script(.cep, [.status(503), .status(502), .status(500)])
      _ = try await client(server, transport, recorder: recorder, backoffMax: 3).lookup("01001000")
      // Windows 1, 2, then min(4, 3) = 3.
      #expect(recorder.waits.withLock { $0 } == [0.5, 1.0, 1.5])
      #expect(requests(server, on: .cep).count == 4)
    }
  }

  @Test(
    "Retry-After replaces the draw: seconds, an HTTP-date against the clock, and the cap",
    arguments: testedTransportKinds)
  func retryAfter(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let recorder = Recorder()
      server.script(
        .cep,
        [
          .status(429, retryAfter: "2"),
          .status(503, retryAfter: "Sun, 06 Nov 1994 08:49:40 GMT"),
          .status(429, retryAfter: "3600"),
        ])
      _ = try await client(server, transport, recorder: recorder, backoffMax: 10).lookup("01001000")
      #expect(recorder.waits.withLock { $0 } == [2, 3, 10])
    }
  }
}
