import BrazilianDocuments
import Cepis
import CepisMock
import Foundation

/// `hedge`: the tail latency of `lookup` when cep.is answers a share of requests late, with
/// ViaCEP as fallback, with or without `hedgeAfter`.
///
/// The mocks run in this process (unlike `serve`): each run scripts its own faults, so
/// exactly `--slow-share` of the cep.is requests wait `--slow-seconds` (at seeded positions,
/// the same in every run), and the latencies measured are dominated by those waits, not by
/// CPU shared with the server. One cep.is request per lookup: the delay is far below the
/// client's 10 s attempt timeout, and a hedged lookup cancels its slow request.
///
/// ViaCEP gets a server of its own, on another port, as it has another host in real life:
/// URLSession limits connections per host and port, and on one shared port the hedged
/// requests would queue behind the slow cep.is ones in the client's own connection pool.
func hedgeBenchmark(_ args: Arguments) async {
  let lookups = args.int("lookups", 200)
  let concurrency = args.int("concurrency", 8)
  let slowShare = args.double("slow-share", 0.10)
  let slowSeconds = args.double("slow-seconds", 2)
  let hedgeAfter = args.options["hedge-after"].map { text -> TimeInterval in
    guard let value = Double(text), value >= 0 else { fail("bad --hedge-after") }
    return value
  }
  guard lookups > 0, lookups <= 1_000, concurrency > 0 else { fail("bad --lookups/--concurrency") }

  var configuration = MockServer.Configuration()
  configuration.maxLogEntries = 10_000
  let server = MockServer(configuration: configuration)
  let viaCEPServer = MockServer(configuration: configuration)
  do {
    try await server.start()
    try await viaCEPServer.start()
  } catch {
    fail("cannot start the mocks: \(error)")
  }
  let client = Client(
    baseURL: server.baseURL, timeout: 10, transport: benchTransport(args),
    fallbacks: [.viaCEP(baseURL: viaCEPServer.baseURL, budget: .unlimited)],
    hedgeAfter: hedgeAfter)
  // Existing synthetic CEPs (values ending in 0), one per lookup.
  let ceps = (0..<lookups).map { String(10_000_000 + $0 * 10) }
  // Warm the connection pool outside the measurement.
  for cep in ceps.prefix(concurrency) { _ = try? await client.lookup(cep) }
  server.reset()

  // Exactly round(share × lookups) slow answers, at positions drawn from a fixed seed.
  let slowCount = Int((Double(lookups) * slowShare).rounded())
  var random = SplitMix64(state: 12)
  var positions = Array(0..<lookups)
  positions.shuffle(using: &random)
  let slow = Set(positions.prefix(slowCount))
  server.script(
    .cep, (0..<lookups).map { slow.contains($0) ? .delayHeaders(slowSeconds) : .normal })

  let start = nowNanos()
  let results: [(Double, AddressSource)] = await withTaskGroup(of: (Double, AddressSource).self) {
    group in
    var next = 0
    func add() {
      let cep = ceps[next]
      next += 1
      group.addTask {
        let t0 = nowNanos()
        let address: Address
        do { address = try await client.lookup(cep) } catch { fail("lookup \(cep): \(error)") }
        return (Double(nowNanos() - t0) / 1e6, address.source)
      }
    }
    for _ in 0..<min(concurrency, lookups) { add() }
    var all: [(Double, AddressSource)] = []
    while let result = await group.next() {
      all.append(result)
      if next < lookups { add() }
    }
    return all
  }
  let wall = Double(nowNanos() - start) / 1e9
  // Let the cancelled requests' closes reach the server's log.
  try? await Task.sleep(nanoseconds: 300_000_000)
  let log = server.requests
  let viaCEPLog = viaCEPServer.requests
  await server.stop()
  await viaCEPServer.stop()

  let latencies = results.map(\.0).sorted()
  report("lookups", lookups)
  report("slow_answers", slowCount)
  report("hedge_after_s", hedgeAfter.map { format($0, 3) } ?? "none")
  report("wall_s", format(wall, 3))
  report("p50_ms", format(percentile(latencies, 50), 1))
  report("p90_ms", format(percentile(latencies, 90), 1))
  report("p99_ms", format(percentile(latencies, 99), 1))
  report("max_ms", format(latencies.last ?? .nan, 1))
  report("answered_by_viacep", results.filter { $0.1 == .viaCEP }.count)
  report("cepis_requests", log.filter { $0.route == .cep }.count)
  report("viacep_requests", viaCEPLog.filter { $0.route == .viaCEP }.count)
  report("cepis_closed_by_client", log.filter { $0.route == .cep && $0.clientClosed }.count)
}
