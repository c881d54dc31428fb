import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

/// `cepis enrich` through the address cache: a repeated run asks nothing but the edition, and
/// processes sharing one cache file all answer every row with its own CEP's data.
@Suite("cepis binary: enrich through the address cache")
struct EnrichCacheTests {
  /// The eight digits of `cep`.
  static func digits(_ cep: Int) -> String {
    let text = String(cep)
    return String(repeating: "0", count: max(0, 8 - text.count)) + text
  }

  /// A CSV of `ceps` (numbers), with an id column before the CEP.
  static func csv(_ ceps: [Int]) -> String {
    var text = "id,cep\n"
    for (index, cep) in ceps.enumerated() { text += "\(index),\(Self.digits(cep))\n" }
    return text
  }

  /// Checks every row of `output` against the mock's data for the row's own CEP.
  static func check(_ output: URL, ceps: [Int], server: MockServer) throws {
    let records = try CSVReader.records(in: Data(contentsOf: output))
    try #require(records.count == ceps.count + 1)
    for (index, record) in records.dropFirst().enumerated() {
      let cep = Self.digits(ceps[index])
      try #require(record.fields.count == 9, "row \(index)")
      #expect(record.fields[0] == String(index) && record.fields[1] == cep, "row \(index)")
      #expect(record.fields[8] == "ok", "row \(index), CEP \(cep)")
      let truth = try #require(server.dataset.address(for: cep), "CEP \(cep)")
      let expected = [
        truth.logradouro, truth.complemento, truth.bairro, truth.localidade, truth.uf, truth.ibge,
      ]
      #expect(Array(record.fields[2...7]) == expected, "row \(index), CEP \(cep)")
    }
  }

  /// Existing CEPs of the mock (none ends in 9).
  static func existing(_ range: Range<Int>) -> [Int] { range.map { 10_000_000 + $0 * 10 } }

  static func count(_ server: MockServer, _ path: String) -> Int {
    server.requests.filter { $0.path == path }.count
  }

  @Test(arguments: cliTransports)
  func aSecondRunAsksOnlyTheEdition(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // 2,400 rows, 1,200 distinct CEPs, repeats far apart.
        let distinct = Self.existing(0..<1_200)
        let ceps = distinct + distinct.reversed()
        let input = directory.appendingPathComponent("in.csv")
        try Data(Self.csv(ceps).utf8).write(to: input)
        let cache = ["--cache", directory.appendingPathComponent("cache").path + "/"]
        func enrich(_ name: String) async throws -> (RunResult, Data) {
          let output = directory.appendingPathComponent(name)
          let result = try await CLI.run(
            [
              "enrich", input.path, "-o", output.path, "--base-url",
              server.baseURL.absoluteString, "--format", "json",
            ] + cache)
          return (result, try Data(contentsOf: output))
        }
        let (first, firstOutput) = try await enrich("first.csv")
        #expect(first.status == 0, "\(first.err)")
        #expect(first.out.contains(#""cache_hits":0"#), "\(first.out)")
        try Self.check(directory.appendingPathComponent("first.csv"), ceps: ceps, server: server)
        let csvBefore = Self.count(server, "/csv")
        let healthBefore = Self.count(server, "/health")
        #expect(csvBefore == 3 && healthBefore == 1)

        let (second, secondOutput) = try await enrich("second.csv")
        #expect(second.status == 0, "\(second.err)")
        #expect(secondOutput == firstOutput)
        #expect(Self.count(server, "/csv") == csvBefore)
        #expect(Self.count(server, "/health") == healthBefore + 1)
        #expect(second.out.contains(#""cache_hits":1200"#), "\(second.out)")
        #expect(second.out.contains(#""requests":0"#), "\(second.out)")
        #expect(second.err.isEmpty, "\(second.err)")

        // The text summary says so too.
        let text = try await CLI.run(
          ["enrich", input.path, "-o", directory.appendingPathComponent("third.csv").path]
            + ["--base-url", server.baseURL.absoluteString] + cache)
        #expect(text.err.contains("requests 0 (minimum 0), cache hits 1200"), "\(text.err)")
      }
    }
  }

  @Test(arguments: cliTransports)
  func fourProcessesShareOneCacheFile(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = directory.appendingPathComponent("shared.sqlite").path
        // Four files of 1,500 distinct CEPs each, every one overlapping the next by half, in
        // different orders, with repeats.
        var files: [(input: URL, output: URL, ceps: [Int])] = []
        for process in 0..<4 {
          var ceps = Self.existing(process * 750..<process * 750 + 1_500)
          if process % 2 == 1 { ceps.reverse() }
          ceps += ceps.prefix(300)
          let input = directory.appendingPathComponent("in-\(process).csv")
          try Data(Self.csv(ceps).utf8).write(to: input)
          files.append((input, directory.appendingPathComponent("out-\(process).csv"), ceps))
        }
        let running = try files.map { file in
          try CLI.start(
            [
              "enrich", file.input.path, "-o", file.output.path, "--base-url",
              server.baseURL.absoluteString, "--cache", cache,
            ])
        }
        for (process, run) in running.enumerated() {
          let result = try await run.wait(timeout: 120)
          #expect(result.status == 0, "process \(process): \(result.err)")
          #expect(!result.err.lowercased().contains("locked"), "process \(process): \(result.err)")
          #expect(!result.err.contains("warning"), "process \(process): \(result.err)")
        }
        for file in files {
          try Self.check(file.output, ceps: file.ceps, server: server)
        }
      }
    }
  }

  @Test func aCacheWarningReachesStderrEvenWithQuiet() async throws {
    try await withMockServer { server in
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let ceps = Self.existing(0..<600)
      let input = directory.appendingPathComponent("in.csv")
      let output = directory.appendingPathComponent("out.csv")
      try Data(Self.csv(ceps).utf8).write(to: input)
      let file = directory.appendingPathComponent("cache.sqlite")
      try Data(repeating: 0x5A, count: 8_192).write(to: file)
      let result = try await CLI.run(
        [
          "enrich", input.path, "-o", output.path, "-q", "--base-url",
          server.baseURL.absoluteString, "--cache", file.path,
        ])
      #expect(result.status == 0, "\(result.err)")
      let warnings = result.err.split(separator: "\n").filter { $0.contains("address cache") }
      #expect(warnings.count == 1, "\(result.err)")
      try Self.check(output, ceps: ceps, server: server)
    }
  }

  @Test(arguments: cliTransports)
  func batchUsesTheCacheToo(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let lines = Self.existing(0..<700).map(Self.digits).joined(separator: "\n") + "\n"
        let input = directory.appendingPathComponent("ceps.txt")
        try Data(lines.utf8).write(to: input)
        let arguments = [
          "batch", input.path, "--format", "csv", "--base-url", server.baseURL.absoluteString,
          "--cache", directory.path + "/",
        ]
        let first = try await CLI.run(arguments)
        #expect(first.status == 0, "\(first.err)")
        #expect(Self.count(server, "/csv") == 2)
        let second = try await CLI.run(arguments)
        #expect(second.status == 0 && second.out == first.out, "\(second.err)")
        #expect(Self.count(server, "/csv") == 2)
        #expect(Self.count(server, "/health") == 2)
        let uncached = try await CLI.run(arguments + ["--no-cache"])
        #expect(uncached.out == first.out)
        #expect(Self.count(server, "/csv") == 4)
        #expect(Self.count(server, "/health") == 2)
      }
    }
  }
}
