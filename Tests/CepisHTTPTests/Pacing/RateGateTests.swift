import CepisSupport
import Foundation
import Testing

@testable import CepisHTTP

/// A clock that moves only when the gate sleeps on it.
final class VirtualClock: Sendable {
  private let time = LockedValue(0.0)
  private let slept = LockedValue<[Double]>([])

  var now: Double { time.withLock { $0 } }
  var sleeps: [Double] { slept.withLock { $0 } }

  func sleep(_ seconds: Double) async throws {
    try Task.checkCancellation()
    slept.withLock { $0.append(seconds) }
    time.withLock { $0 += seconds }
  }
}

@Suite("The rate gate of a bulk run, on a virtual clock")
struct RateGateTests {
  static let refusal = HTTPResponse(
    status: 429, headers: ["retry-after": "7"], body: Data(#"{"mensagem":"devagar"}"#.utf8))

  func gate(_ clock: VirtualClock, maxInFlight: Int = 2, patience: Double = 600) -> RateGate {
    RateGate(
      maxInFlight: maxInFlight, patience: patience, now: { clock.now },
      sleep: { try await clock.sleep($0) })
  }

  @Test("a sender after a 429 sleeps exactly until its Retry-After")
  func waitsOutThePause() async throws {
    let clock = VirtualClock()
    let gate = gate(clock)
    let first = try await gate.admit(deadline: nil)
    gate.refused(first, retryAfter: 7, response: Self.refusal)
    _ = try await gate.admit(deadline: nil)
    #expect(clock.sleeps == [7])
    #expect(gate.statistics.refusals == 1)
    #expect(gate.statistics.pauses == 1)
  }

  @Test("a wait past the call's deadline fails at once with the last 429, sleeping nothing")
  func deadline() async throws {
    let clock = VirtualClock()
    let gate = gate(clock)
    let first = try await gate.admit(deadline: nil)
    gate.refused(first, retryAfter: 7, response: Self.refusal)
    await #expect(throws: HTTPFailure.rateLimited(retryAfter: 7, response: Self.refusal)) {
      _ = try await gate.admit(deadline: 3)
    }
    #expect(clock.sleeps.isEmpty)
  }

  @Test("nothing but 429s for the patience: the gate gives up with the last 429")
  func patience() async throws {
    let clock = VirtualClock()
    let gate = gate(clock, patience: 20)
    var refused = 0
    do {
      while true {
        let ticket = try await gate.admit(deadline: nil)
        refused += 1
        gate.refused(ticket, retryAfter: 7, response: Self.refusal)
      }
    } catch let failure as HTTPFailure {
      #expect(failure == .rateLimited(retryAfter: 7, response: Self.refusal))
    }
    #expect(clock.now >= 20)
    #expect(clock.now < 30)
    #expect(refused >= 3)
  }

  @Test(
    "a sender waiting for a slot gets it when a request ends, and leaves at once when cancelled")
  func slots() async throws {
    let clock = VirtualClock()
    let gate = gate(clock, maxInFlight: 1)
    let held = try await gate.admit(deadline: nil)
    let waiter = Task { try await gate.admit(deadline: nil) }
    let cancelled = Task { try await gate.admit(deadline: nil) }
    cancelled.cancel()
    await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
    gate.answered(held)
    let next = try await waiter.value
    gate.released(next)
    #expect(clock.sleeps.isEmpty)
  }
}
