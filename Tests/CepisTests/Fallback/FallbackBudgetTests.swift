import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("A fallback's budget and cool-down")
struct FallbackBudgetTests {
  @Test("a budget lets its burst through, then its rate; a 429 or 403 cools the service down")
  func allowanceArithmetic() {
    let fallback = Fallback.viaCEP(budget: .perMinute(6, burst: 2, coolDown: 100))
    var allowance = fallback.allowance(now: 0)
    let early = [0, 0, 0, 9.9, 10].map { allowance.permit(now: $0) }
    #expect(early == [true, true, false, false, true])
    allowance.refused(now: 20, retryAfter: nil)
    let cooling = [20, 60, 119.9, 120].map { allowance.permit(now: $0) }
    #expect(cooling == [false, false, false, true])
    // A Retry-After longer than the cool-down wins.
    allowance.refused(now: 200, retryAfter: 500)
    let later = [650, 700].map { allowance.permit(now: $0) }
    #expect(later == [false, true])
  }

  @Test("an unlimited budget never refuses, but still cools down")
  func unlimited() {
    var allowance = Fallback.viaCEP(budget: .unlimited).allowance(now: 0)
    let many = (0..<10_000).allSatisfy { _ in allowance.permit(now: 0) }
    #expect(many)
    allowance.refused(now: 1, retryAfter: 5)
    let during = allowance.permit(now: 3)
    let after = allowance.permit(now: 6)
    #expect(!during)
    #expect(after)
  }

  @Test(
    "the defaults stay clear of the services' blocks",
    arguments: [
      // ViaCEP has blocked after ~550 requests in two hours; BrasilAPI speaks of ~100 a minute.
      (FallbackBudget.viaCEPDefault, "3/min (burst 10, cool-down 600 s)", 120.0, 550.0),
      (.brasilAPIDefault, "30/min (burst 30, cool-down 600 s)", 1, 100),
    ])
  func defaults(budget: FallbackBudget, text: String, minutes: Double, blockedAfter: Double) {
    #expect(budget.description == text)
    #expect(budget.coolDown == 600)
    // The most requests the budget allows over the service's window: its burst and its rate.
    let most = Double(budget.burst) + minutes * budget.requestsPerMinute
    #expect(most < 0.7 * blockedAfter)
  }

  @Test(
    "a fallback whose budget is spent is skipped: the lookup fails with cep.is's own error",
    arguments: testedTransportKinds)
  func budgetSpent(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      let via = Fallback.viaCEP(baseURL: server.baseURL, budget: .perMinute(1, burst: 3))
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [via], maxAttempts: 1)
      let ceps = Array(server.dataset.sampleCEPs.prefix(8))
      var sources: [AddressSource] = []
      var errors: [CepisError] = []
      for cep in ceps {
        do {
          sources.append(try await client.lookup(cep).source)
        } catch let error as CepisError {
          errors.append(error)
        }
      }
      #expect(sources == [.viaCEP, .viaCEP, .viaCEP])
      #expect(errors.count == 5)
      #expect(errors.allSatisfy { if case .serverError(_, 503) = $0 { true } else { false } })
      #expect(requests(server, on: .viaCEP).count == 3)
    }
  }

  @Test(
    "a fallback that answered 429 or 403 is left alone for its cool-down; the next one answers",
    arguments: testedTransportKinds, [MockFault.status(429, retryAfter: "30"), .status(403)])
  func coolDown(transport: Transport.Kind, refusal: MockFault) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      server.script(.viaCEP, [refusal])
      let client = fallbackClient(
        transport, baseURL: server.baseURL,
        fallbacks: [
          // Budgets that never run out here, with the default ten-minute cool-down.
          .viaCEP(baseURL: server.baseURL, budget: .perMinute(6_000)),
          .brasilAPI(baseURL: server.baseURL, budget: .perMinute(6_000)),
        ], maxAttempts: 1)
      let ceps = Array(server.dataset.sampleCEPs.prefix(4))
      var sources: [AddressSource] = []
      for cep in ceps { sources.append(try await client.lookup(cep).source) }
      #expect(sources == [.brasilAPI, .brasilAPI, .brasilAPI, .brasilAPI])
      #expect(requests(server, on: .viaCEP).count == 1)
      #expect(requests(server, on: .brasilAPI).count == 4)
    }
  }

  @Test(
    "a hedge spends the fallback's budget: once it is spent, cep.is answers alone",
    arguments: testedTransportKinds)
  func hedgeWithinBudget(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let via = Fallback.viaCEP(baseURL: server.baseURL, budget: .perMinute(1, burst: 1))
      let client = fallbackClient(
        transport, baseURL: server.baseURL, fallbacks: [via], hedgeAfter: 0.05, timeout: 60)
      let ceps = Array(server.dataset.sampleCEPs.prefix(2))
      // cep.is holds its first answer far past any scheduling delay, so the hedge wins it
      // however loaded the machine is; the lookup cancels the held request.
      server.setMode(.cep, [.delayHeaders(60)])
      let first = try await client.lookup(ceps[0])
      // Slower than the hedge's delay: a fallback with budget left would be asked now.
      server.setMode(.cep, [.delayHeaders(0.5)])
      let second = try await client.lookup(ceps[1])
      #expect(first.source == .viaCEP)
      #expect(second.source == .cepis)
      #expect(requests(server, on: .viaCEP).count == 1)
    }
  }
}

@Suite("The public fallbacks during a cep.is outage", .serialized)
struct FallbackOutageTests {
  @Test(
    "5,000 lookups, 16 at once, while cep.is answers 503: no fallback past its budget or into its block, every lookup ends in time",
    arguments: testedTransportKinds)
  func outage(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.setMode(.cep, [.status(503)])
      // As the services themselves: ViaCEP blocks an address after ~550 requests in two hours;
      // BrasilAPI lets ~100 a minute through.
      server.limitRate(.viaCEP, .block(after: 550, within: 7_200, for: 3_600))
      server.limitRate(.brasilAPI, .tokenBucket(perSecond: 100.0 / 60, burst: 100))
      let fallbacks: [Fallback] = [
        .viaCEP(baseURL: server.baseURL), .brasilAPI(baseURL: server.baseURL),
      ]
      let totalTimeout = 5.0
      let client = makeClient(
        transport, baseURL: server.baseURL, maxAttempts: 2, totalTimeout: totalTimeout,
        fallbacks: fallbacks, hedgeAfter: 0.2)
      let lookups = 5_000
      let started = Date()
      let outcomes = try await withThrowingTaskGroup(
        of: (cep: String, address: Address?, error: CepisError?, seconds: Double).self
      ) { group in
        var outcomes: [(cep: String, address: Address?, error: CepisError?, seconds: Double)] = []
        for index in 0..<lookups {
          if index >= 16, let outcome = try await group.next() { outcomes.append(outcome) }
          let cep = String(10_000_000 + index * 10)
          group.addTask {
            let start = Date()
            do {
              let address = try await client.lookup(cep)
              return (cep, address, nil, Date().timeIntervalSince(start))
            } catch {
              return (cep, nil, error as? CepisError, Date().timeIntervalSince(start))
            }
          }
        }
        for try await outcome in group { outcomes.append(outcome) }
        return outcomes
      }
      let minutes = Date().timeIntervalSince(started) / 60
      #expect(outcomes.count == lookups)
      for budget in [FallbackBudget.viaCEPDefault, .brasilAPIDefault] {
        let route: MockRoute = budget == .viaCEPDefault ? .viaCEP : .brasilAPI
        let most = Double(budget.burst) + (minutes * budget.requestsPerMinute).rounded(.up)
        #expect(Double(requests(server, on: route).count) <= most, "\(route)")
      }
      // The budget was used, not merely never reached.
      #expect(requests(server, on: .viaCEP).count >= FallbackBudget.viaCEPDefault.burst)
      #expect(server.blockedCount(on: .viaCEP) == 0)
      #expect(server.rateLimitedCount(on: .brasilAPI) == 0)
      var answered = 0
      for outcome in outcomes {
        // The total timeout holds; the slack is room for a loaded two-core machine (this test
        // runs beside the whole suite), which has been seen to add 1.75 s.
        #expect(outcome.seconds <= totalTimeout + 3, "\(outcome.cep)")
        if let address = outcome.address {
          answered += 1
          let expected =
            address.source == .viaCEP
            ? expectedViaCEP(server, outcome.cep) : expectedBrasilAPI(server, outcome.cep)
          #expect(address == expected, "\(outcome.cep)")
        } else {
          // cep.is's own error: the one a client without fallbacks would have thrown.
          guard case .serverError(_, 503)? = outcome.error else {
            Issue.record("\(outcome.cep): \(String(describing: outcome.error))")
            continue
          }
        }
      }
      #expect(
        answered == requests(server, on: .viaCEP).count + requests(server, on: .brasilAPI).count)
    }
  }
}
