import CepisHTTP
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

extension CepisError {
  /// Whether cep.is ended without an answer, so a fallback may be asked: the network, a
  /// deadline, a 5xx or a 429 after retries. Never "not found", a rejected CEP or an answer
  /// of another shape.
  var allowsFallback: Bool {
    switch self {
    case .networkError, .serverError, .rateLimited: return true
    case .invalidCEP, .cepNotFound, .invalidResponse: return false
    }
  }
}

extension FallbackOutcome {
  /// The outcome's name in events: `found`, `not_found`, `failed`.
  var eventName: String {
    switch self {
    case .found: return "found"
    case .notFound: return "not_found"
    case .failed: return "failed"
    }
  }
}

/// What the lookup's concurrent parts report to the orchestration loop.
private enum LookupEvent: Sendable {
  /// cep.is (with its retries) ended.
  case cepis(Result<Address, any Error>)
  /// The hedging delay passed.
  case hedge
  /// A fallback attempt ended.
  case fallback(FallbackOutcome)
}

/// How the network ended a single lookup that did not fail.
enum NetworkAnswer: Sendable {
  /// An address (from cep.is or a fallback: see ``Address/source``).
  case found(Address)
  /// "Does not exist", said by cep.is itself or by a fallback.
  case notFound(fromCepis: Bool)
}

extension Client {
  /// ``answerWithFallbacks(_:)`` with "does not exist" thrown as
  /// ``CepisError/cepNotFound(_:)``.
  func lookupWithFallbacks(_ digits: String) async throws -> Address {
    switch try await answerWithFallbacks(digits) {
    case .found(let address): return address
    case .notFound: throw CepisError.cepNotFound(digits)
    }
  }

  /// ``lookup(_:)`` with ``fallbacks``: cep.is first; fallbacks in order, one attempt each,
  /// when cep.is ends without an answer; the first fallback early when ``hedgeAfter`` passes
  /// first. Every request still in flight when a definitive answer arrives is cancelled (the
  /// task group cancels its child, whose transport abandons the request and so closes the
  /// connection).
  func answerWithFallbacks(_ digits: String) async throws -> NetworkAnswer {
    let deadline = totalTimeout.map { monotonicSeconds() + $0 }
    let fallbacks = self.fallbacks
    return try await withThrowingTaskGroup(of: LookupEvent.self) { group -> NetworkAnswer in
      group.addTask {
        do {
          return .cepis(.success(try await lookupAtCepis(digits)))
        } catch {
          return .cepis(.failure(error))
        }
      }
      if let hedgeAfter {
        group.addTask {
          // Cancelled only when the lookup is over, so the early return changes nothing.
          try? await sleepSeconds(hedgeAfter)
          return .hedge
        }
      }
      var nextFallback = 0
      var fallbackInFlight = false
      var cepisFailure: CepisError?

      /// Starts the next fallback within what is left of the deadline; `false` when none is
      /// left or no time is.
      /// Fallbacks whose budget is spent, or that are cooling down, are skipped.
      func startNextFallback() -> Bool {
        var limit = timeout
        if let deadline {
          let remaining = deadline - monotonicSeconds()
          guard remaining > 0 else { return false }
          limit = min(limit, remaining)
        }
        while nextFallback < fallbacks.count {
          let fallback = fallbacks[nextFallback]
          nextFallback += 1
          guard transport.allowances.permit(fallback.allowanceKey, make: fallback.allowance)
          else {
            Self.record(.fallbackSkipped(provider: fallback.source.eventName))
            continue
          }
          Self.record(
            .fallbackStarted(provider: fallback.source.eventName, hedged: cepisFailure == nil))
          fallbackInFlight = true
          group.addTask { .fallback(await ask(fallback, cep: digits, timeout: limit)) }
          return true
        }
        return false
      }

      while let event = try await group.next() {
        if Task.isCancelled {
          group.cancelAll()
          throw CancellationError()
        }
        switch event {
        case .cepis(.success(let address)):
          group.cancelAll()
          return .found(address)
        case .cepis(.failure(let error)):
          if case .cepNotFound? = error as? CepisError {
            group.cancelAll()
            return .notFound(fromCepis: true)
          }
          guard let failure = error as? CepisError, failure.allowsFallback else {
            group.cancelAll()
            throw error
          }
          cepisFailure = failure
          if !fallbackInFlight && !startNextFallback() {
            group.cancelAll()
            throw failure
          }
        case .hedge:
          // Only the first fallback is hedged; the others wait for cep.is to fail.
          if cepisFailure == nil && nextFallback == 0 {
            _ = startNextFallback()
          }
        case .fallback(let outcome):
          fallbackInFlight = false
          switch outcome {
          case .found(let address):
            group.cancelAll()
            return .found(address)
          case .notFound:
            group.cancelAll()
            return .notFound(fromCepis: false)
          case .failed:
            // While cep.is is still trying, wait for it; once it has failed, go on.
            if let cepisFailure, !startNextFallback() {
              group.cancelAll()
              throw cepisFailure
            }
          }
        }
      }
      // Not reached: cep.is always reports, and every path above returns or throws.
      throw cepisFailure ?? CepisError.networkError(message: "no source answered")
    }
  }

  /// One attempt at `fallback`, through the client's own transport, within `timeout`
  /// seconds. Never throws: a cancelled attempt is reported as failed, and the caller, whose
  /// group was cancelled, no longer listens.
  func ask(_ fallback: Fallback, cep: String, timeout: TimeInterval) async -> FallbackOutcome {
    let agent = userAgent ?? "cepis-swift/\(Self.version) (+https://cep.is)"
    guard let request = fallback.request(for: cep, userAgent: agent) else {
      return .failed("cannot build a URL from base \(quoted(fallback.base))")
    }
    let outcome = await askUnobserved(fallback, request: request, cep: cep, timeout: timeout)
    Self.record(.fallbackEnded(provider: fallback.source.eventName, outcome: outcome.eventName))
    return outcome
  }

  private func askUnobserved(
    _ fallback: Fallback, request: HTTPRequest, cep: String, timeout: TimeInterval
  ) async -> FallbackOutcome {
    do {
      // One attempt, with the same redirect rule and framing checks as every cep.is attempt.
      let response = try await core.executor.sendFollowingRedirects(request, timeout: timeout)
      if response.status == 429 || response.status == 403 {
        // Rate limited or blocked: leave the service alone for a while.
        transport.allowances.refused(
          fallback.allowanceKey,
          retryAfter: response.header("retry-after").flatMap {
            RetryAfter.seconds(from: $0, now: core.executor.environment.now())
          },
          make: fallback.allowance)
      }
      return fallback.interpret(response, cep: cep)
    } catch let failure as HTTPFailure {
      return .failed("\(Self.map(failure))")
    } catch is AttemptTimedOut {
      return .failed("no complete answer within \(timeout) s")
    } catch {
      return .failed("\(error)")
    }
  }
}
