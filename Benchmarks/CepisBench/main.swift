// cepis-bench: the measuring half of the benchmark suite. `Benchmarks/run` drives it and
// writes Benchmarks/RESULTS.md; every subcommand prints `key=value` lines.

import BrazilianDocuments
import Cepis
import CepisMock
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

let usage = """
  usage: cepis-bench COMMAND [OPTIONS]
    serve [--port N] [--keep-answers-mib M] [--tls=on]   run CepisMock, print its base URL, wait
                                            for SIGTERM; with M, /csv answers (M MiB at most) are
                                            kept and sent again for the same query, not built
                                            again; with --tls (trait builds), over HTTPS through
                                            a TLS relay, the authority's certificate path printed
                                            on the next line
    (client commands take --cacert FILE: trust that authority too)
    requests [--count N]                      requests lookupMany sends vs the minimum (in-process mock)
    gen-urls --base-url URL --ceps N --out F  the /csv URLs lookupMany sends for the bulk workload (curl config)
    transports                                the transports this build has
    decode --base-url URL [--ceps N] [--repeats R]   the batch decoder alone: ns per row
    distinct [--ceps N] [--repeats R]         lookupMany's de-duplication alone, probed vs sorted:
                                              ns per input, on sorted, shuffled and repeating inputs
    memo --base-url URL [--ceps N] [--capacity C] [--repeats R]   the lookups memo alone over N
                                              distinct CEPs
                                              answered a chunk at a time: ns per CEP
    bulk --base-url URL --ceps N [--transport T|canned]
         [--api lookupMany|lookups|lookups-main-actor|lookups-async] [--memo N]
         [--observe none|default|memory]      lookupMany (or the lookups stream) over N CEPs: wall, CPU, resolved
    lookups-rss --rows N --distinct D [--transport T]   the lookups stream over N generated rows
                                              holding D distinct CEPs (in-process mock): peak RSS, requests
    ahc-bulk / ahc-single (trait builds)      bare AsyncHTTPClient loops: the ceiling rows
    single --base-url URL --concurrency C --seconds S [--cep CEP] [--observe none|default|memory]
           [--cache FILE|redis://HOST:PORT] [--cycle K]
                                              lookup loop: rps, p50, p99 (--cycle: K CEPs in turn)
    (--observe: who hears the client's events; none turns observability off, memory records
     them in the three backends' in-memory kits: Observability trait builds)
    gen-csv FILE --mb N                       a cep.is-shaped CSV
    csv FILE                                  CSVReader throughput
    rss-loop --base-url URL [--rounds N]      RSS while one 500-CEP batch repeats
    gen-docs DIR [--count N]                  DIR/cpf.txt, DIR/cnpj.txt (mixed valid/invalid)
    documents DIR [--iterations N]            ns per CPF.isValid / CNPJ.isValid call
    hedge --lookups N [--hedge-after S]       lookup p50/p99 with cep.is 10 % slow (in-process mock)
    gen-enrich FILE --rows N [--distinct D]   an input for `cepis enrich` (with D: exactly D
                                              distinct CEPs spread at random)
  """

let argv = CommandLine.arguments
guard argv.count >= 2 else { fail(usage) }
let command = argv[1]
let args = Arguments(argv[2...])
if await runTransportCommand(command, args) { exit(0) }

switch command {
case "serve":
  var configuration = MockServer.Configuration()
  configuration.port = args.int("port", 0)
  configuration.maxLogEntries = 1_000
  configuration.maxConnections = 1_024
  configuration.idleTimeout = 120
  configuration.keptCSVAnswerBytes = args.int("keep-answers-mib", 0) << 20
  let server = MockServer(configuration: configuration)
  do { try await server.start() } catch { fail("cannot start the mock: \(error)") }
  if args.options["tls"] != nil {
    // The same routes over HTTPS (trait builds): the URL, then the authority's certificate.
    await serveOverTLS(server)
  } else {
    print(server.baseURL.absoluteString)
  }
  fflush(nil)
  while true { try? await Task.sleep(nanoseconds: 3_600_000_000_000) }

case "requests":
  let count = args.int("count", 100_000)
  let workload = MixedWorkload(count: count, duplicateShare: 0.30, malformedShare: 0.05, seed: 11)
  var configuration = MockServer.Configuration()
  configuration.maxLogEntries = 10
  let server = MockServer(configuration: configuration)
  do { try await server.start() } catch { fail("cannot start the mock: \(error)") }
  let client = Client(baseURL: server.baseURL, timeout: 30)
  let before = server.requestCount
  let found: [Address?]
  do { found = try await client.lookupMany(workload.inputs) } catch { fail("lookupMany: \(error)") }
  let sent = server.requestCount - before
  await server.stop()
  let expectedFound = workload.inputs.filter { input in
    guard let digits = try? normalizeCEP(input), let value = Int(digits) else { return false }
    return value % 10 != 9
  }.count
  report("inputs", count)
  report("distinct_valid", workload.distinct.count)
  report("malformed", workload.inputs.filter { (try? normalizeCEP($0)) == nil }.count)
  report("requests_sent", sent)
  report("requests_min", workload.minimumRequests)
  report("ratio", format(Double(sent) / Double(workload.minimumRequests), 4))
  report("found", found.compactMap { $0 }.count)
  report("found_expected", expectedFound)

case "gen-urls":
  let inputs = bulkWorkload(count: args.int("ceps", 1_000_000))
  let urls = batchURLs(base: args.string("base-url"), inputs: inputs)
  let writer = FileWriter(args.string("out"))
  for url in urls { writer.write("url = \"\(url)\"\noutput = \"/dev/null\"\n") }
  writer.close()
  report("urls", urls.count)

case "decode":
  // The batch decoder alone, on one thread: every `/csv` answer of the bulk workload fetched
  // once, then decoded `--repeats` times over. Steadier than `bulk --transport canned` for
  // changes of a few percent (no engine, no tasks, no page faults of a growing memo).
  guard let base = URL(string: args.string("base-url")) else { fail("bad --base-url") }
  let inputs = bulkWorkload(count: args.int("ceps", 200_000))
  let urls = batchURLs(base: base.absoluteString, inputs: inputs)
  let canned = await CannedTransport.fetching(urls)
  let answers = urls.map { url -> (body: Data, numbers: [Int]) in
    let query = url.split(separator: "=", maxSplits: 1).last ?? ""
    return (canned.responses[url]!.body, query.split(separator: ",").map { Int($0)! })
  }
  let repeats = args.int("repeats", 5)
  var rows = 0
  let cpu0 = processCPUSeconds()
  for _ in 0..<repeats {
    for answer in answers {
      guard let found = try? Client.decodeBatchRows(answer.body, numbers: answer.numbers) else {
        fail("decode: an answer did not decode")
      }
      rows += found.count
    }
  }
  let cpu = processCPUSeconds() - cpu0
  report("rows", rows)
  report("cpu_s", format(cpu))
  report("ns_per_row", format(cpu / Double(rows) * 1e9, 1))

case "distinct":
  // `lookupMany`'s de-duplication alone, one thread, both ways side by side on the same
  // inputs: a hash table probed per input (what fewer than `DistinctCEPs.sortFrom` inputs
  // get) and the radix sort. Best of `--repeats`; the two results must be equal.
  let count = args.int("ceps", 1_000_000)
  let repeats = args.int("repeats", 5)
  var random = SplitMix64(state: 0x5EED_D157)
  let sorted = bulkWorkload(count: count)
  let shapes: [(name: String, inputs: [String])] = [
    ("sorted", sorted),
    ("shuffled", sorted.shuffled(using: &random)),
    (
      "repeating",
      MixedWorkload(count: count, duplicateShare: 0.3, malformedShare: 0.01, seed: 7).inputs
    ),
  ]
  for (name, inputs) in shapes {
    var best = (probe: Double.infinity, sort: Double.infinity)
    for _ in 0..<repeats {
      let cpu0 = processCPUSeconds()
      let probed = DistinctCEPs(inputs, sortFrom: .max)
      let cpu1 = processCPUSeconds()
      let sorted = DistinctCEPs(inputs, sortFrom: 0)
      let cpu2 = processCPUSeconds()
      guard probed == sorted else { fail("distinct: the two ways disagree on \(name)") }
      best = (min(best.probe, cpu1 - cpu0), min(best.sort, cpu2 - cpu1))
    }
    report("\(name)_probe_ns", format(best.probe / Double(count) * 1e9, 1))
    report("\(name)_sort_ns", format(best.sort / Double(count) * 1e9, 1))
  }

case "memo":
  // The `lookups` stream's memo alone, one thread, as a run of distinct CEPs drives it: each
  // CEP found unknown (and now waiting) when its row is read, its answer kept (forgetting the
  // oldest once full) when its chunk comes back, four chunks later. The answers are the bulk
  // workload's own, decoded before the clock starts.
  guard let base = URL(string: args.string("base-url")) else { fail("bad --base-url") }
  let inputs = bulkWorkload(count: args.int("ceps", 1_000_000))
  let urls = batchURLs(base: base.absoluteString, inputs: inputs)
  let canned = await CannedTransport.fetching(urls)
  let chunks = urls.map { url -> (numbers: [Int], answers: [LookupResult]) in
    let query = url.split(separator: "=", maxSplits: 1).last ?? ""
    let numbers = query.split(separator: ",").map { Int($0)! }
    guard let found = try? Client.decodeBatchRows(canned.responses[url]!.body, numbers: numbers)
    else { fail("memo: an answer did not decode") }
    return (numbers, found.map { $0.map(LookupResult.init(found:)) ?? .notFound })
  }
  let repeats = args.int("repeats", 1)
  var evictions = 0
  let cpu0 = processCPUSeconds()
  for _ in 0..<repeats {
    var memo = LookupMemo(capacity: args.int("capacity", 100_000))
    var waiting: [[Int32]] = []
    var ask: Int32 = 0
    // Chunk `index` is asked; the one asked three chunks before is answered.
    for index in 0..<(chunks.count + 3) {
      if index < chunks.count {
        var entries: [Int32] = []
        entries.reserveCapacity(chunks[index].numbers.count)
        for number in chunks[index].numbers {
          guard case .unknown(let entry) = memo.state(of: number, orWaitFor: ask) else {
            fail("memo: a distinct CEP was known")
          }
          entries.append(entry)
          ask &+= 1
        }
        waiting.append(entries)
      }
      if index >= 3 {
        memo.readAheadForgetting(chunks[index - 3].numbers.count)
        for (entry, answer) in zip(waiting.removeFirst(), chunks[index - 3].answers) {
          memo.keep(answer, entry: entry)
        }
      }
    }
    evictions = memo.evictions
  }
  let cpu = (processCPUSeconds() - cpu0) / Double(repeats)
  report("evictions", evictions)
  report("ns_per_cep", format(cpu / Double(inputs.count) * 1e9, 1))

case "bulk":
  guard let base = URL(string: args.string("base-url")) else { fail("bad --base-url") }
  let inputs = bulkWorkload(count: args.int("ceps", 1_000_000))
  let transport: Transport
  if args.options["transport"] == "canned" {
    // The engine and the decoder alone: every answer fetched first (see Canned.swift).
    let canned = await CannedTransport.fetching(
      batchURLs(base: base.absoluteString, inputs: inputs))
    transport = Transport(kind: .urlSession, base: canned)
  } else {
    transport = benchTransport(args)
  }
  let client = observed(Client(baseURL: base, timeout: 60, transport: transport), args)
  // Warm the connection pool and the code paths outside the measurement.
  _ = try? await client.lookupMany(Array(inputs.prefix(2_000)))
  let api = args.options["api"] ?? "lookupMany"
  await markForProfiler()
  let cpu0 = processCPUSeconds()
  let t0 = nowNanos()
  var resolved = 0
  // lookupMany's answer, kept until the clock stops: the figures are lookupMany's own, not
  // the counting below nor the freeing of a million addresses when the caller drops them.
  var found: [Address?] = []
  var stopped: (wall: UInt64, cpu: Double)?
  switch api {
  case "lookupMany":
    do { found = try await client.lookupMany(inputs) } catch { fail("lookupMany: \(error)") }
    stopped = (nowNanos(), processCPUSeconds())
    resolved = found.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
  case "lookups":
    // `--memo N`: the run-wide memo's capacity (default BulkOptions's).
    let options = BulkOptions(memoCapacity: args.int("memo", BulkOptions().memoCapacity))
    resolved = await countResolved(client.lookups(inputs, options: options))
  case "lookups-main-actor":
    // The same loop in this top-level code, on the main actor (an app's view model would
    // run it there): two executor checks a row that a nonisolated loop does not make. Not
    // `countResolved` with an `isolated` parameter set to the main actor: that loop made no
    // check a row (counted); only code statically on the main actor pays them.
    do {
      for try await answer in client.lookups(inputs) {
        switch answer.result {
        case .success(let address): if address != nil { resolved += 1 }
        case .failure(let error): fail("lookups: row \(answer.row): \(error)")
        }
      }
    } catch { fail("lookups: \(error)") }
  case "lookups-async":
    // The same CEPs from an asynchronous sequence (as a database cursor would give them): read
    // by the stream's reader task, not inline.
    resolved = await countResolved(client.lookups(AsyncCEPs(ceps: inputs)))
  default:
    fail("--api lookupMany|lookups|lookups-main-actor|lookups-async")
  }
  let wall = Double((stopped?.wall ?? nowNanos()) - t0) / 1e9
  let cpu = (stopped?.cpu ?? processCPUSeconds()) - cpu0
  found = []
  report("ceps", inputs.count)
  report("resolved", resolved)
  report("requests", (inputs.count + 499) / 500)
  report("wall_s", format(wall))
  report("cpu_s", format(cpu))
  report("cpu_us_per_cep", format(cpu / Double(inputs.count) * 1e6, 3))
  report("peak_rss_mib", format(peakRSSMiB(), 1))

case "single":
  guard let base = URL(string: args.string("base-url")) else { fail("bad --base-url") }
  let concurrency = args.int("concurrency", 1)
  let seconds = args.double("seconds", 5)
  let cep = args.options["cep"] ?? "10000000"
  // The same connection limit as the bare-URLSession floor below, through the session the
  // client takes its configuration from.
  var transport = benchTransport(args)
  if transport.kind == .urlSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = max(6, concurrency)
    transport = .urlSession(configuration)
  }
  // `--cache FILE|redis://…`: through an address cache, warmed with the CEPs before the clock
  // starts. `--cycle K`: K distinct CEPs in turn, more than the cache's memory front holds,
  // so that every cached read goes to the store.
  let cache = benchCache(args.options["cache"])
  let client = observed(
    Client(baseURL: base, timeout: 30, transport: transport, cache: cache), args)
  let cycle = args.int("cycle", 1)
  // Every tenth CEP of the mock (one ending in 9 does not exist there).
  let ceps = cycle <= 1 ? [cep] : (0..<cycle).map { String(10_000_000 + $0 * 10) }
  if cache != nil { for cep in ceps { _ = try? await client.lookup(cep) } }
  let turn = Turn(count: ceps.count)
  await reportRequestLoop(concurrency: concurrency, seconds: seconds) {
    _ = try await client.lookup(ceps[turn.next()])
  }
  if let warning = cache?.warnings.first { fail("cache: \(warning)") }

case "observe-adapter":
  await benchObserveAdapter(calls: args.int("calls", 100_000))

case "valkey-get":
  await benchValkeyRoundTrip(args.string("cache"), seconds: args.double("seconds", 5))

case "urlsession-single":
  // The floor under `single`: bare URLSession (no Cepis code), same URL, same concurrency.
  guard let base = URL(string: args.string("base-url")) else { fail("bad --base-url") }
  let concurrency = args.int("concurrency", 1)
  let seconds = args.double("seconds", 5)
  let url = base.appendingPathComponent(args.options["cep"] ?? "10000000")
  let configuration = URLSessionConfiguration.ephemeral
  configuration.httpMaximumConnectionsPerHost = max(6, concurrency)
  let session = URLSession(configuration: configuration)
  guard #available(macOS 12, iOS 15, tvOS 15, watchOS 8, *) else {
    fail("URLSession's async data(from:) needs macOS 12")
  }
  await reportRequestLoop(concurrency: concurrency, seconds: seconds) {
    _ = try await session.data(from: url)
  }

case "urlsession-bulk":
  // The floor under `bulk`: bare URLSession fetching the same /csv URLs, 4 in flight, bodies
  // counted but not decoded.
  guard let base = URL(string: args.string("base-url")) else { fail("bad --base-url") }
  let inputs = bulkWorkload(count: args.int("ceps", 1_000_000))
  let urls = batchURLs(base: base.absoluteString, inputs: inputs)
  let session = URLSession(configuration: .ephemeral)
  guard #available(macOS 12, iOS 15, tvOS 15, watchOS 8, *) else {
    fail("URLSession's async data(from:) needs macOS 12")
  }
  await reportBulkFetch(urls: urls, ceps: inputs.count) { url in
    guard let url = URL(string: url) else { return 0 }
    return (try? await session.data(from: url))?.0.count ?? 0
  }

case "gen-csv":
  guard let path = args.positionals.first else { fail("gen-csv FILE --mb N") }
  let (bytes, records) = generateCEPCSV(path: path, megabytes: args.int("mb", 100))
  report("bytes", bytes)
  report("records", records)

case "csv":
  guard let path = args.positionals.first else { fail("csv FILE") }
  let fd = open(path, O_RDONLY)
  guard fd >= 0 else { fail("cannot open \(path)") }
  let chunkSize = 1 << 16
  let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
  var reader = CSVReader()
  var records = 0
  var fields = 0
  var bytes = 0
  let t0 = nowNanos()
  var done = false
  while true {
    do {
      while let record = try reader.next() {
        records += 1
        fields += record.fields.count
      }
    } catch { fail("\(error)") }
    if done { break }
    let n = read(fd, chunk.baseAddress, chunkSize)
    if n <= 0 {
      reader.finish()
      done = true
    } else {
      bytes += n
      reader.append(UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
    }
  }
  let wall = Double(nowNanos() - t0) / 1e9
  close(fd)
  report("bytes", bytes)
  report("records", records)
  report("fields", fields)
  report("wall_s", format(wall))
  report("mb_per_s", format(Double(bytes) / 1e6 / wall, 2))

case "gen-docs":
  guard let directory = args.positionals.first else { fail("gen-docs DIR") }
  let count = args.int("count", 4_096)
  try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  let cpfs = generateCPFs(count: count, seed: 3)
  let cnpjs = generateCNPJs(count: count, seed: 5)
  writeFile(directory + "/cpf.txt", Array((cpfs.joined(separator: "\n") + "\n").utf8))
  writeFile(directory + "/cnpj.txt", Array((cnpjs.joined(separator: "\n") + "\n").utf8))
  report("cpf_valid", cpfs.filter(CPF.isValid).count)
  report("cnpj_valid", cnpjs.filter(CNPJ.isValid).count)
  report("count", count)

case "documents":
  guard let directory = args.positionals.first else { fail("documents DIR") }
  let iterations = args.int("iterations", 200)
  let cpfs = readLines(directory + "/cpf.txt")
  let cnpjs = readLines(directory + "/cnpj.txt")
  let cpfBytes = cpfs.map { Array($0.utf8) }
  let cnpjBytes = cnpjs.map { Array($0.utf8) }

  @inline(never)
  func timeStrings(_ inputs: [String], _ check: (String) -> Bool) -> (Double, Int) {
    var valid = 0
    let t0 = nowNanos()
    for _ in 0..<iterations {
      for input in inputs where check(input) { valid &+= 1 }
    }
    let ns = Double(nowNanos() - t0) / Double(iterations * inputs.count)
    blackhole(valid)
    return (ns, valid / iterations)
  }
  @inline(never)
  func timeBytes(_ inputs: [[UInt8]], _ check: ([UInt8]) -> Bool) -> (Double, Int) {
    var valid = 0
    let t0 = nowNanos()
    for _ in 0..<iterations {
      for input in inputs where check(input) { valid &+= 1 }
    }
    let ns = Double(nowNanos() - t0) / Double(iterations * inputs.count)
    blackhole(valid)
    return (ns, valid / iterations)
  }
  // Warm-up, then the measured passes.
  _ = timeStrings(cpfs) { CPF.isValid($0) }
  let cpf = timeStrings(cpfs) { CPF.isValid($0) }
  let cpfUTF8 = timeBytes(cpfBytes) { CPF.isValid(utf8: $0) }
  let cnpj = timeStrings(cnpjs) { CNPJ.isValid($0) }
  let cnpjUTF8 = timeBytes(cnpjBytes) { CNPJ.isValid(utf8: $0) }
  report("inputs", cpfs.count)
  report("cpf_ns", format(cpf.0, 2))
  report("cpf_valid", cpf.1)
  report("cpf_utf8_ns", format(cpfUTF8.0, 2))
  report("cnpj_ns", format(cnpj.0, 2))
  report("cnpj_valid", cnpj.1)
  report("cnpj_utf8_ns", format(cnpjUTF8.0, 2))

case "rss-loop":
  // Memory per request: the same 500-CEP batch sent again and again, RSS printed as it goes.
  guard let base = URL(string: args.string("base-url")) else { fail("bad --base-url") }
  let rounds = args.int("rounds", 2_000)
  let client = Client(baseURL: base, timeout: 60, transport: benchTransport(args))
  let batch = (0..<500).map { String(10_000_000 + $0 * 17) }
  for round in 1...rounds {
    do { _ = try await client.lookupMany(batch) } catch { fail("lookupMany: \(error)") }
    if round % (rounds / 5) == 0 { report("rss_mib_after_\(round)", format(currentRSSMiB(), 1)) }
  }

case "lookups-rss":
  // The stream's memory against the number of rows: rows generated as they are read (no
  // input array), D distinct CEPs spread at random over them.
  let rows = args.int("rows", 1_000_000)
  let distinct = args.int("distinct", 30_000)
  var configuration = MockServer.Configuration()
  configuration.maxLogEntries = 10
  let server = MockServer(configuration: configuration)
  do { try await server.start() } catch { fail("cannot start the mock: \(error)") }
  let client = Client(baseURL: server.baseURL, timeout: 60, transport: benchTransport(args))
  let before = server.requestCount
  var answered = 0
  let t0 = nowNanos()
  do {
    for try await answer in client.lookups(GeneratedRows(count: rows, distinct: distinct)) {
      if case .failure(let error) = answer.result { fail("lookups: \(error)") }
      answered += 1
    }
  } catch { fail("lookups: \(error)") }
  let wall = Double(nowNanos() - t0) / 1e9
  let sent = server.requestCount - before
  await server.stop()
  report("rows", answered)
  report("distinct", distinct)
  report("requests", sent)
  report("requests_min", (distinct + Client.maxBatch - 1) / Client.maxBatch)
  report("wall_s", format(wall))
  report("peak_rss_mib", format(peakRSSMiB(), 1))

case "gen-enrich":
  guard let path = args.positionals.first else { fail("gen-enrich FILE --rows N") }
  let rows = args.int("rows", 100_000)
  let distinct =
    args.options["distinct"] == nil
    ? generateEnrichCSV(path: path, rows: rows)
    : generateSpreadEnrichCSV(
      path: path, rows: rows, distinct: args.int("distinct", rows), seed: 13)
  report("rows", rows)
  report("distinct_valid", distinct)

case "hedge":
  await hedgeBenchmark(args)

default:
  fail(usage)
}
