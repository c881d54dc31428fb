import BrazilianDocuments
import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What `enrich` costs in requests, read from CepisMock's request log: the run-wide memo,
/// full chunks only, failing chunks, the memo's bound, and `--resume` with an empty memo.
@Suite("cepis enrich: requests and memo", .serialized)
struct EnrichRequestTests {
  /// An input file and the output `enrich` must write for it, byte for byte.
  struct Fixture {
    var input = Data()
    var expected = Data()
    /// The distinct valid CEPs, 8 digits.
    var distinct = Set<String>()
    var rows = 0

    /// Starts with a BOM and a header whose quoted name holds a comma.
    init() {
      let header = "\u{FEFF}id,\"nome, completo\",cep"
      input.append(contentsOf: Array((header + "\r\n").utf8))
      expected.append(contentsOf: Array((header + EnrichTests.header + "\r\n").utf8))
    }

    /// Adds a row for `cep` (any spelling), alternating CRLF and LF, with quoted names;
    /// `answer` replaces the appended fields the dataset implies.
    mutating func add(_ cep: String, dataset: MockDataset, answer: String? = nil) {
      let names = ["Ana", "\"Silva, João\"", "\"He said \"\"hi\"\"\"", "\"two\nlines\"", "Zé"]
      let line = "\(rows),\(names[rows % names.count]),\(cep)"
      let end = rows % 2 == 0 ? "\r\n" : "\n"
      input.append(contentsOf: Array((line + end).utf8))
      let appended: String
      if let digits = try? normalizeCEP(cep) {
        appended = EnrichTests.appended(dataset, digits)
        distinct.insert(digits)
      } else {
        appended = ",,,,,,,invalid"
      }
      expected.append(contentsOf: Array((line + (answer ?? appended) + end).utf8))
      rows += 1
    }

    /// ⌈distinct ÷ 500⌉.
    var minimumRequests: Int { (distinct.count + 499) / 500 }
  }

  /// A synthetic CEP (about one in ten does not exist), spelled masked or not.
  static func cep(_ index: Int, masked: Bool = false) -> String {
    let digits = String(10_000_000 + index * 2_003)
    return masked ? "\(digits.prefix(5))-\(digits.suffix(3))" : digits
  }

  /// Every CEP asked in the `/csv` requests of the log, in order, repeats included.
  static func askedCEPs(_ server: MockServer) -> [String] {
    server.requests.filter { $0.path.hasSuffix("/csv") }.flatMap { record in
      (record.queryItems["ceps"] ?? "").split(separator: ",").map(String.init)
    }
  }

  static func csvRequests(_ server: MockServer) -> Int {
    server.requests.filter { $0.path.hasSuffix("/csv") }.count
  }

  /// The `enrich` object of a `--format json` summary.
  static func summary(_ text: String) throws -> [String: Any] {
    let line = text.split(separator: "\n").last.map(String.init) ?? ""
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    guard let enrich = object?["enrich"] as? [String: Any] else {
      throw CLIError(description: "no enrich summary in \(text)")
    }
    return enrich
  }

  /// The case: 4,000 distinct CEPs, each five times at random places, in 20,000
  /// rows (plus malformed ones): exactly ⌈4,000 ÷ 500⌉ requests, each CEP in one of them.
  @Test(arguments: cliTransports) func repeatsFarApartCostExactlyTheMinimum(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        var slots: [Int] = []
        for index in 0..<4_000 { slots += Array(repeating: index, count: 5) }
        slots += Array(repeating: -1, count: 200)
        var generator = SplitMix64(state: 11)
        slots.shuffle(using: &generator)
        var fixture = Fixture()
        for slot in slots {
          fixture.add(
            slot < 0 ? "n/a" : Self.cep(slot, masked: generator.next() % 2 == 0),
            dataset: server.dataset)
        }
        #expect(fixture.minimumRequests == 8)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.csv")
        let output = directory.appendingPathComponent("out.csv")
        try fixture.input.write(to: input)
        let result = try await CLI.run([
          "enrich", input.path, "-o", output.path, "--base-url", server.baseURL.absoluteString,
          "--format", "json",
        ])
        #expect(result.status == 1)  // some CEPs do not exist, some rows are malformed
        #expect(try Data(contentsOf: output) == fixture.expected)
        let asked = Self.askedCEPs(server)
        #expect(Self.csvRequests(server) == 8)
        #expect(asked.count == 4_000)
        #expect(Set(asked) == fixture.distinct)
        let summary = try Self.summary(result.out)
        #expect(summary["requests"] as? Int == 8)
        #expect(summary["minimum_requests"] as? Int == 8)
        #expect(summary["rows"] as? Int == fixture.rows)
        #expect(summary["invalid"] as? Int == 200)
      }
    }
  }

  /// Repeats further apart than the read-ahead are answered by the memo: one request per
  /// 500 distinct CEPs; without the memo (`--memo 0`) they are asked again.
  @Test(arguments: cliTransports) func theMemoAnswersRepeatsBeyondTheReadAhead(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        var fixture = Fixture()
        for index in 0..<1_500 { fixture.add(Self.cep(index), dataset: server.dataset) }
        var generator = SplitMix64(state: 5)
        var repeats = (0..<6_000).map { $0 % 1_500 }
        repeats.shuffle(using: &generator)
        for index in repeats {
          fixture.add(Self.cep(index, masked: index % 2 == 0), dataset: server.dataset)
        }
        let url = server.baseURL.absoluteString
        let run = try await CLI.run(
          ["enrich", "-", "--base-url", url, "--window", "600"], stdin: fixture.input)
        #expect(Data(run.out.utf8) == fixture.expected)
        #expect(Self.csvRequests(server) == 3)
        #expect(Self.askedCEPs(server).count == 1_500)
        #expect(run.err.contains("requests 3 (minimum 3)"))

        server.clearLog()
        let forgetful = try await CLI.run(
          ["enrich", "-", "--base-url", url, "--window", "600", "--memo", "0"],
          stdin: fixture.input)
        #expect(Data(forgetful.out.utf8) == fixture.expected)
        #expect(Self.askedCEPs(server).count > 3_000)
        #expect(forgetful.err.contains("(minimum 3)"))
      }
    }
  }

  /// Against a rate-limited `/csv`: every row is written as without the limit, byte for byte,
  /// and the summary counts the 429s and the pauses.
  @Test(arguments: cliTransports) func underARateLimitEveryRowAndTheSummarySaysSo(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        // One request at once, one every two seconds: the three chunks, sent together, cannot
        // all pass, however slowly a loaded machine sends them.
        server.limitRate(.csv, .tokenBucket(perSecond: 0.5, burst: 1, retryAfter: .seconds(1)))
        var fixture = Fixture()
        for index in 0..<1_500 { fixture.add(Self.cep(index), dataset: server.dataset) }
        let run = try await CLI.run(
          ["enrich", "-", "--base-url", server.baseURL.absoluteString, "--format", "json"],
          stdin: fixture.input)
        #expect(Data(run.out.utf8) == fixture.expected)
        let summary = try #require(
          try JSONSerialization.jsonObject(with: Data(run.err.utf8)) as? [String: Any])
        let enrich = try #require(summary["enrich"] as? [String: Any])
        #expect(enrich["errors"] as? Int == 0)
        let refused = try #require(enrich["rate_limited"] as? Int)
        #expect(refused == server.rateLimitedCount(on: .csv))
        #expect(refused >= 1)
        #expect(enrich["rate_limit_pauses"] as? Int ?? 0 >= 1)
        #expect(enrich["rate_limit_paused_seconds"] as? Double ?? 0 >= 1)
        #expect(server.acceptedCount(on: .csv) == 3)
      }
    }
  }

  /// The first chunk fails after its retries: only its rows say so, its CEPs are not
  /// memoised, and the same CEPs later in the file are asked again and answered.
  @Test(arguments: cliTransports) func aFailingChunksCEPsAreAskedAgainByALaterRow(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.script(.csv, [.status(503)])
        // 500 CEPs (the first chunk, which fails), 500 more, then the first 500 again: their
        // first rows say error, their repeats are answered.
        var fixture = Fixture()
        for row in 0..<1_500 {
          fixture.add(
            Self.cep(row < 1_000 ? row : row - 1_000), dataset: server.dataset,
            answer: row < 500 ? ",,,,,,,error: server_error" : nil)
        }
        let result = try await CLI.run(
          [
            "enrich", "-", "--base-url", server.baseURL.absoluteString, "--attempts", "1",
            "--window", "600",
          ], stdin: fixture.input)
        #expect(result.status == 3)
        #expect(Data(result.out.utf8) == fixture.expected)
        #expect(Self.csvRequests(server) == 3)
        let asked = Self.askedCEPs(server)
        let first = Set((0..<500).map { Self.cep($0) })
        #expect(asked.filter(first.contains).count == 1_000)
        #expect(result.err.contains("500 errors"))
        #expect(result.err.contains("requests 3 (minimum 2)"))
      }
    }
  }

  /// With `--memo 100`, 600 CEPs asked in turn three times are each asked three times (the
  /// memo kept no more than 100), while one CEP repeated every 20 rows stays the most
  /// recently used and is asked once; every row is still right.
  @Test(arguments: cliTransports) func theMemoBoundHoldsAndTheOutputStaysRight(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        var fixture = Fixture()
        let hot = Self.cep(5_000)
        for turn in 0..<3 {
          for index in 0..<600 {
            fixture.add(Self.cep(index, masked: turn == 1), dataset: server.dataset)
            if index % 20 == 0 { fixture.add(hot, dataset: server.dataset) }
          }
        }
        let result = try await CLI.run(
          [
            "enrich", "-", "--base-url", server.baseURL.absoluteString, "--memo", "100",
            "--window", "50", "--format", "json",
          ], stdin: fixture.input)
        #expect(Data(result.out.utf8) == fixture.expected)
        let asked = Self.askedCEPs(server)
        var counts: [String: Int] = [:]
        for cep in asked { counts[cep, default: 0] += 1 }
        #expect(counts[hot] == 1)
        #expect(counts.count == 601)
        #expect((0..<600).allSatisfy { counts[Self.cep($0)] == 3 })
        let summary = try Self.summary(result.err)
        #expect(summary["memo_capacity"] as? Int == 100)
        #expect((summary["memo_evictions"] as? Int ?? 0) >= 1_700)
        #expect(summary["minimum_requests"] as? Int == 2)
      }
    }
  }

  /// Interrupted while a request hangs, then resumed with an empty memo: the output is byte
  /// for byte that of an uninterrupted run.
  @Test(arguments: cliTransports) func resumeWithAnEmptyMemoIsByteEqual(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        var fixture = Fixture()
        for row in 0..<6_000 {
          fixture.add(Self.cep(row * 7 % 2_000, masked: row % 3 == 0), dataset: server.dataset)
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.csv")
        let partial = directory.appendingPathComponent("partial.csv")
        try fixture.input.write(to: input)
        // A read-ahead of 600 rows: each chunk goes out only once the one before is answered,
        // so the scripted faults meet the chunks in order.
        let arguments = [
          "enrich", input.path, "--base-url", server.baseURL.absoluteString, "--window", "600",
        ]

        // The first two chunks are answered; the third hangs until the run is interrupted.
        server.script(.csv, [.normal, .normal] + Array(repeating: .delayHeaders(30), count: 8))
        let running = try CLI.start(arguments + ["-o", partial.path])
        let deadline = Date().addingTimeInterval(30)
        while Self.csvRequests(server) < 3 && Date() < deadline {
          try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(Self.csvRequests(server) == 3)
        try await Task.sleep(nanoseconds: 500_000_000)
        running.signal(SIGINT)
        let interrupted = try await running.wait(timeout: 30)
        #expect(interrupted.status == 130)
        #expect(interrupted.err.contains("--resume"))
        let written = try CSVReader.records(in: Data(contentsOf: partial))
        #expect(written.count == 1_001)  // the header, and the rows of the first 1,000 CEPs

        // A torn last row as well.
        let handle = try FileHandle(forUpdating: partial)
        let size = try handle.seekToEnd()
        try handle.truncate(atOffset: size - 5)
        try handle.close()

        server.reset()
        let resumed = try await CLI.run(arguments + ["-o", partial.path, "--resume"])
        #expect(resumed.status == 1)
        #expect(resumed.err.contains("resumed after 999 rows"))
        #expect(try Data(contentsOf: partial) == fixture.expected)
        // The memo starts empty: CEPs answered before the interruption are asked again.
        #expect(Set(Self.askedCEPs(server)).count == 2_000)

        let help = try await CLI.run(["enrich", "--help"])
        #expect(help.out.contains("--memo N"))
        #expect(help.out.contains("empty memo"))
      }
    }
  }

  @Test(arguments: cliTransports) func theJSONSummaryGoesToStderrWhenTheCSVIsOnStdout(
    transport: Transport.Kind
  ) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let url = server.baseURL.absoluteString
        let text = Data("cep\n01001000\n01001-000\nx\n".utf8)
        let result = try await CLI.run(
          ["enrich", "-", "--base-url", url, "--format", "json"], stdin: text)
        #expect(result.out.hasPrefix("cep" + EnrichTests.header + "\n01001000,"))
        let summary = try Self.summary(result.err)
        #expect(summary["rows"] as? Int == 3)
        #expect(summary["requests"] as? Int == 1)
        #expect(summary["minimum_requests"] as? Int == 1)
        #expect(summary["distinct_ceps"] as? Int == 1)
        let wrong = try await CLI.run(
          ["enrich", "-", "--base-url", url, "--format", "csv"], stdin: text)
        #expect(wrong.status == 2)
        #expect(wrong.err.contains("text or json"))
        let badMemo = try await CLI.run(
          ["enrich", "-", "--base-url", url, "--memo", "-1"], stdin: text)
        #expect(badMemo.status == 2)
      }
    }
  }
}
