import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("Retry budget against CepisMock")
struct RetryBudgetEndToEndTests {
  @Test(
    "an outage drains the budget and retries stop; recovery refills it and retries resume",
    arguments: testedTransportKinds)
  func outageThenRecovery(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fastClient(
        server, transport, maxAttempts: 3,
        retryBudget: RetryBudget(capacity: 20, retryCost: 5, timeoutRetryCost: 10, successRefund: 1)
      )
      // The outage: exactly the seven failures the budget allows for, then the API is back.
      server.script(.cep, Array(repeating: .status(503), count: 7))
      for expectedTotal in [3, 6, 7] {
        await #expect {
          try await client.lookup("01001000")
        } throws: { error in
          guard case .serverError(_, 503) = error as? CepisError else { return false }
          return true
        }
        #expect(requests(server, on: .cep).count == expectedTotal)
      }
      // Back up: the first successes refill the bucket one token each…
      for _ in 0..<5 {
        _ = try await client.lookup("01001000")
      }
      #expect(requests(server, on: .cep).count == 12)
      // …and with five tokens a retry is affordable again.
      server.script(.cep, [.status(503)])
      let address = try await client.lookup("01001000")
      #expect(address.cep == "01001000")
      #expect(requests(server, on: .cep).count == 14)
    }
  }

  @Test(
    "with the budget disabled every call retries up to maxAttempts",
    arguments: testedTransportKinds)
  func disabled(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let client = fastClient(server, transport, maxAttempts: 3, retryBudget: nil)
      server.script(.cep, Array(repeating: .status(503), count: 30))
      for _ in 0..<10 {
        await #expect(throws: CepisError.self) { try await client.lookup("01001000") }
      }
      #expect(requests(server, on: .cep).count == 30)
    }
  }
}
