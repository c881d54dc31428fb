import BrazilianDocuments
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

#if canImport(Glibc)
  import Glibc
#endif

/// The promise under load and faults: every input ends in the right address, `nil` when it
/// does not exist, or a typed error — retriable, or `invalidResponse` for an HTML page where
/// JSON was promised (final by the client's contract) — never a wrong address, never a lost
/// input.
///
/// `swift test` runs a quick soak; `Scripts/chaos-soak` runs the full 100,000 lookups by
/// setting `CEPIS_SOAK_LOOKUPS`.
@Suite("Chaos soak against CepisMock")
struct ChaosSoakTests {
  struct Tally {
    var lookups = 0
    var correct = 0
    var absent = 0
    var retriableErrors = 0
    var invalidResponses = 0
    /// Calls (a single lookup, or a `lookupMany`) that ended in `invalidResponse`.
    var invalidCalls = 0
    var wrong = 0
    var lost = 0
    var calls = 0
    var batchChunks = 0
    var singleCalls = 0
  }

  static var lookups: Int {
    ProcessInfo.processInfo.environment["CEPIS_SOAK_LOOKUPS"].flatMap(Int.init) ?? 4_000
  }

  @Test(
    "single and batch lookups through a seeded storm: zero wrong, zero lost",
    arguments: testedTransportKinds)
  func soak(transport: Transport.Kind) async throws {
    let server = MockServer(
      configuration: .init(chaos: MockChaos(seed: 20_261_129, rate: 0.3), maxLogEntries: 1_000))
    try await server.start()
    let maxAttempts = 4
    let clients = (0..<3).map { _ in
      makeClient(
        transport, baseURL: server.baseURL, timeout: 2, maxAttempts: maxAttempts,
        backoffBase: 0.001, backoffMax: 0.01, retryBudget: nil)
    }
    // Warm up so the process's thread pools and the server's threads exist before counting.
    _ = try? await clients[0].lookupMany(["10000000"])
    let before = ResourceSnapshot.take()

    let perWorker = max(1, Self.lookups / 3)
    let tallies = try await withThrowingTaskGroup(of: Tally.self) { group in
      for (worker, client) in clients.enumerated() {
        group.addTask {
          try await Self.work(
            client: client, server: server, worker: worker, lookups: perWorker)
        }
      }
      var all: [Tally] = []
      for try await tally in group { all.append(tally) }
      return all
    }
    var total = Tally()
    for tally in tallies {
      total.lookups += tally.lookups
      total.correct += tally.correct
      total.absent += tally.absent
      total.retriableErrors += tally.retriableErrors
      total.invalidResponses += tally.invalidResponses
      total.invalidCalls += tally.invalidCalls
      total.wrong += tally.wrong
      total.lost += tally.lost
      total.batchChunks += tally.batchChunks
      total.singleCalls += tally.singleCalls
    }
    let requestsSent = server.requestCount - 1  // less the warm-up
    let faults = server.faultCounts.values.reduce(0, +)
    let htmlPages = server.faultCounts[MockFault.htmlPortal.name, default: 0]
    await server.stop()
    // Let URLSession release the connections the server just closed.
    try await Task.sleep(nanoseconds: 300_000_000)
    let after = ResourceSnapshot.take()

    print(
      "chaos soak: lookups=\(total.lookups) correct=\(total.correct) absent=\(total.absent)"
        + " retriable_errors=\(total.retriableErrors)"
        + " invalid_responses=\(total.invalidResponses) wrong=\(total.wrong) lost=\(total.lost)"
        + " invalid_calls=\(total.invalidCalls) html_pages=\(htmlPages)"
        + " requests=\(requestsSent) faults_injected=\(faults)"
        + " fds=\(before.descriptors)->\(after.descriptors)"
        + " threads=\(before.threads)->\(after.threads)"
        + " rss_mb=\(before.residentMB)->\(after.residentMB)")
    #expect(total.wrong == 0)
    #expect(total.lost == 0)
    #expect(total.lookups == perWorker * 3)
    #expect(
      total.correct + total.absent + total.retriableErrors + total.invalidResponses
        == total.lookups)
    #expect(faults > 0)
    // Every chunk and every single lookup costs at most maxAttempts requests.
    #expect(requestsSent <= (total.batchChunks + total.singleCalls) * maxAttempts)
    // A storm at 30 % with 4 attempts is survivable: retries exhaust for few inputs. An HTML
    // page is final by contract, and a batch call that meets one fails whole (up to ~120
    // inputs), so how many inputs end that way depends on which call draws the page; what
    // holds whatever the scheduling is that no call ends so without a page of its own.
    #expect(total.retriableErrors < total.lookups / 10)
    #expect(total.invalidCalls <= htmlPages)
    #if os(Linux)
      // Process-wide counts are only meaningful when the soak runs alone, as
      // `Scripts/chaos-soak` runs it (CEPIS_ISOLATED=1); other suites open their own.
      if ProcessInfo.processInfo.environment["CEPIS_ISOLATED"] == "1" {
        #expect(after.descriptors <= before.descriptors + 8)
        #expect(after.threads <= before.threads + 8)
        #expect(after.residentMB <= before.residentMB + 200)
      }
    #endif
  }

  static func work(client: Client, server: MockServer, worker: Int, lookups: Int) async throws
    -> Tally
  {
    var tally = Tally()
    var generator = SplitMix64(state: UInt64(worker) &* 7_919 &+ 1)
    var remaining = lookups
    while remaining > 0 {
      if generator.next() % 100 < 89 {
        // A single lookup, masked half the time: about a tenth of all lookups.
        let cep = syntheticCEP(&generator)
        let input = generator.next() % 2 == 0 ? "\(cep.prefix(5))-\(cep.suffix(3))" : cep
        tally.singleCalls += 1
        tally.lookups += 1
        remaining -= 1
        do {
          let address = try await client.lookup(input)
          if address == expectedAddress(server, cep) {
            tally.correct += 1
          } else {
            tally.wrong += 1
          }
        } catch let error as CepisError {
          switch error {
          case .cepNotFound where server.dataset.address(for: cep) == nil: tally.absent += 1
          case _ where error.isRetriable: tally.retriableErrors += 1
          // An HTML page where JSON was promised: typed, final by contract (not retried).
          case .invalidResponse:
            tally.invalidResponses += 1
            tally.invalidCalls += 1
          default: tally.wrong += 1
          }
        }
        continue
      }
      // A batch with ~30 % duplicates and ~5 % malformed inputs.
      let size = min(remaining, 20 + Int(generator.next() % 100))
      var inputs: [String] = []
      for _ in 0..<size {
        let roll = generator.next() % 100
        if roll < 5 {
          inputs.append("bad-\(roll)")
        } else if roll < 35, let earlier = inputs.last(where: { !$0.hasPrefix("bad") }) {
          inputs.append(earlier)
        } else {
          let cep = syntheticCEP(&generator)
          inputs.append(roll.isMultiple(of: 2) ? "\(cep.prefix(5))-\(cep.suffix(3))" : cep)
        }
      }
      tally.lookups += size
      remaining -= size
      let distinct = Set(inputs.compactMap { try? normalizeCEP($0) }).count
      tally.batchChunks += (distinct + Client.maxBatch - 1) / Client.maxBatch
      do {
        let answers = try await client.lookupMany(inputs)
        guard answers.count == inputs.count else {
          tally.lost += inputs.count
          continue
        }
        for (input, answer) in zip(inputs, answers) {
          let truth = (try? normalizeCEP(input)).flatMap {
            expectedAddress(server, $0, withGeo: false)
          }
          if answer == truth {
            if answer == nil { tally.absent += 1 } else { tally.correct += 1 }
          } else {
            tally.wrong += 1
          }
        }
      } catch let error as CepisError where error.isRetriable {
        tally.retriableErrors += size
      } catch CepisError.invalidResponse {
        tally.invalidResponses += size
        tally.invalidCalls += 1
      } catch {
        tally.wrong += size
      }
    }
    return tally
  }

  /// A CEP from the mock's synthetic range (about one in ten does not exist) or its sample.
  static func syntheticCEP(_ generator: inout SplitMix64) -> String {
    String(10_000_000 + Int(generator.next() % 9_000_000))
  }
}

/// Open descriptors, threads and resident memory of this process (Linux; zeros elsewhere).
struct ResourceSnapshot {
  var descriptors = 0
  var threads = 0
  var residentMB = 0

  static func take() -> ResourceSnapshot {
    var snapshot = ResourceSnapshot()
    #if os(Linux)
      let files = FileManager.default
      snapshot.descriptors = (try? files.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
      snapshot.threads = (try? files.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
      if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        snapshot.residentMB = pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
      }
    #endif
    return snapshot
  }
}
