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

@Suite("cepis enrich", .serialized)
struct EnrichTests {
  /// What enrich appends for a CEP, from the mock's ground truth.
  static func appended(_ dataset: MockDataset, _ cep: String) -> String {
    guard let address = dataset.address(for: cep) else { return ",,,,,,,not_found" }
    let fields = Self.fields(address) + ["ok"]
    return fields.map { "," + quote($0) }.joined()
  }

  static func fields(_ a: MockAddress) -> [String] {
    [a.logradouro, a.complemento, a.bairro, a.localidade, a.uf, a.ibge]
  }

  static func quote(_ field: String) -> String {
    // Over bytes, not Characters: the fixtures of a run quote hundreds of thousands of fields
    // on the test pool's threads.
    let special: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: "\""), 10, 13]
    guard field.utf8.contains(where: special.contains) else { return field }
    return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  static let header = ",logradouro,complemento,bairro,localidade,uf,ibge,cepis_status"

  @Test(arguments: cliTransports) func quotingCRLFBOMBlankLinesInvalidAndDuplicates(
    transport: Transport.Kind
  ) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let d = server.dataset
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.csv")
        let output = directory.appendingPathComponent("out.csv")
        let bom = "\u{FEFF}"
        let text =
          bom + "id,\"full name\",cep\r\n"
          + "1,\"Silva, João\",01001-000\r\n"
          + "2,\"He said \"\"hi\"\"\",99999999\r\n"
          + "\r\n"
          + "3,x,abc\n"
          + "4,\"two\nlines\",10000001\n"
          + "5,dup,01001000\n"
          + "6,short\n"
          + "7,y,10000009"
        try Data(text.utf8).write(to: input)
        let result = try await CLI.run([
          "enrich", input.path, "-o", output.path, "--base-url", server.baseURL.absoluteString,
        ])
        #expect(result.status == 1)
        let expected =
          bom + "id,\"full name\",cep" + Self.header + "\r\n"
          + "1,\"Silva, João\",01001-000" + Self.appended(d, "01001000") + "\r\n"
          + "2,\"He said \"\"hi\"\"\",99999999,,,,,,,not_found\r\n"
          + "\r\n"
          + "3,x,abc,,,,,,,invalid\n"
          + "4,\"two\nlines\",10000001" + Self.appended(d, "10000001") + "\n"
          + "5,dup,01001000" + Self.appended(d, "01001000") + "\n"
          + "6,short,,,,,,,invalid\n"
          + "7,y,10000009,,,,,,,not_found"
        let written = try Data(contentsOf: output)
        #expect(String(decoding: written, as: UTF8.self) == expected)
        #expect(written.prefix(3) == Data([0xEF, 0xBB, 0xBF]))
        #expect(
          result.err.contains(
            "enrich: 8 rows, 3 found, 2 not found, 2 invalid, 0 errors, 1 blank, "
              + "requests 1 (minimum 1), "))
        // Duplicates are sent once, in one batch request.
        let batches = server.requests.filter { $0.path.hasSuffix("/csv") }
        #expect(batches.count == 1)
        #expect(batches.first?.query?.components(separatedBy: ",").count == 4)
      }
    }
  }

  @Test(arguments: cliTransports) func stdoutByDefaultAndColumnOption(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let text = "name;x,postal\nana,01001000\n"
        let result = try await CLI.run(
          ["enrich", "-", "--column", "POSTAL", "--base-url", server.baseURL.absoluteString],
          stdin: Data(text.utf8))
        #expect(result.status == 0)
        #expect(
          result.out
            == "name;x,postal" + Self.header + "\nana,01001000"
            + Self.appended(server.dataset, "01001000") + "\n")
      }
    }
  }

  @Test func progressOnlyWhenAskedForOffATerminal() async throws {
    try await withMockServer { server in
      let url = server.baseURL.absoluteString
      let text = Data("cep\n01001000\n".utf8)
      let quiet = try await CLI.run(["enrich", "-", "--base-url", url], stdin: text)
      #expect(quiet.status == 0)
      #expect(!quiet.err.contains("rows/s"))
      #expect(quiet.err.contains("enrich: 1 rows, 1 found"))
      let loud = try await CLI.run(["enrich", "-", "--base-url", url, "--progress"], stdin: text)
      #expect(loud.err.contains("1 rows, "))
      #expect(loud.err.contains("rows/s"))
      let silent = try await CLI.run(["enrich", "-", "--base-url", url, "-q"], stdin: text)
      #expect(silent.err.isEmpty)
      #expect(silent.out == quiet.out)
    }
  }

  @Test func missingColumnIsAUsageError() async throws {
    let result = try await CLI.run(
      ["enrich", "-", "--base-url", "http://127.0.0.1:9"], stdin: Data("id,zip\n1,2\n".utf8))
    #expect(result.status == 2)
    #expect(result.err.contains("no column 'cep'"))
    #expect(result.err.contains("'id', 'zip'"))
    #expect(result.err.contains("--help"))
    #expect(result.out.isEmpty)
  }

  @Test func unterminatedQuoteWritesTheRowsBeforeAndExits1() async throws {
    try await withMockServer { server in
      let text = "cep,note\n01001000,ok\n10000001,\"never closed\n10000011,x\n"
      let result = try await CLI.run(
        ["enrich", "-", "--base-url", server.baseURL.absoluteString], stdin: Data(text.utf8))
      #expect(result.status == 1)
      #expect(result.err.contains("CSV line 3: quoted field never closed"))
      #expect(
        result.out
          == "cep,note" + Self.header + "\n01001000,ok"
          + Self.appended(server.dataset, "01001000") + "\n")
    }
  }

  @Test(arguments: cliTransports) func failingChunksMarkTheirRowsOrStopWithFailFast(
    transport: Transport.Kind
  ) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.setMode(.csv, [.status(503)])
        let text = "cep\n01001000\nabc\n"
        let url = server.baseURL.absoluteString
        let result = try await CLI.run(
          ["enrich", "-", "--base-url", url, "--attempts", "1"], stdin: Data(text.utf8))
        #expect(result.status == 3)
        #expect(
          result.out == "cep" + Self.header
            + "\n01001000,,,,,,,error: server_error\nabc,,,,,,,invalid\n")
        let fast = try await CLI.run(
          ["enrich", "-", "--base-url", url, "--attempts", "1", "--fail-fast"],
          stdin: Data(text.utf8))
        #expect(fast.status == 3)
        #expect(fast.out == "cep" + Self.header + "\n")
        #expect(fast.err.contains("--fail-fast"))
      }
    }
  }

  @Test(arguments: cliTransports) func chaosRunKeepsEveryRowAndEveryOkRowIsRight(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      let configuration = MockServer.Configuration(chaos: MockChaos(seed: 7, rate: 0.3))
      try await withMockServer(configuration) { server in
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.csv")
        let output = directory.appendingPathComponent("out.csv")
        var text = "id,cep\n"
        var ceps: [String] = []
        // `Scripts/chaos-enrich` runs the full 100,000-row form through CEPIS_ENRICH_CHAOS_ROWS.
        let rows =
          ProcessInfo.processInfo.environment["CEPIS_ENRICH_CHAOS_ROWS"].flatMap(Int.init) ?? 3_000
        for index in 0..<rows {
          let cep: String
          switch index % 50 {
          case 7: cep = "bad\(index)"
          case 11: cep = ceps[index / 2]  // a duplicate
          default: cep = String(10_000_000 + index * 13)
          }
          ceps.append(cep)
          text += "\(index),\(cep)\n"
        }
        try Data(text.utf8).write(to: input)
        var arguments = [
          "enrich", input.path, "-o", output.path, "--base-url", server.baseURL.absoluteString,
          "--attempts", "6", "--timeout", "5", "--window", "700",
        ]
        // `Scripts/chaos-enrich` also runs with a memo far smaller than the file's distinct
        // CEPs (CEPIS_ENRICH_CHAOS_MEMO), so that eviction runs all the time.
        let memo = ProcessInfo.processInfo.environment["CEPIS_ENRICH_CHAOS_MEMO"] ?? ""
        if !memo.isEmpty { arguments += ["--memo", memo] }
        let result = try await CLI.run(arguments, timeout: TimeInterval(120 + rows / 200))
        #expect([0, 1, 3].contains(result.status))
        let records = try CSVReader.records(in: Data(contentsOf: output))
        #expect(records.count == ceps.count + 1)
        var ok = 0
        for (index, record) in records.dropFirst().enumerated() {
          #expect(record.fields.count == 9)
          #expect(record.fields[0] == String(index))
          #expect(record.fields[1] == ceps[index])
          let status = record.fields[8]
          if status == "ok" {
            ok += 1
            let truth = server.dataset.address(for: ceps[index])
            #expect(truth != nil)
            #expect(Array(record.fields[2...7]) == truth.map(Self.fields) ?? [])
          } else if status == "invalid" {
            #expect(ceps[index].hasPrefix("bad"))
          } else if status == "not_found" {
            #expect(server.dataset.address(for: ceps[index]) == nil)
          } else {
            #expect(status.hasPrefix("error: "))
          }
        }
        #expect(ok > rows * 2 / 3)
        print(
          "chaos enrich: rows=\(rows) memo=\(memo.isEmpty ? "default" : memo) ok=\(ok) exit=\(result.status)"
        )
      }
    }
  }

  @Test(arguments: cliTransports) func interruptedRunResumedGivesTheSameBytes(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.setMode(.csv, [.delayHeaders(0.05)])
        let url = server.baseURL.absoluteString
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.csv")
        let full = directory.appendingPathComponent("full.csv")
        let partial = directory.appendingPathComponent("partial.csv")
        var text = "id,\"cep\",note\r\n"
        for index in 0..<20_000 {
          let note = index % 3 == 0 ? "\"a, \"\"b\"\"\"" : "n\(index)"
          let cep = index % 97 == 0 ? "x" : String(10_000_000 + (index * 7919) % 9_000_000)
          text += "\(index),\(cep),\(note)" + (index % 2 == 0 ? "\r\n" : "\n")
        }
        try Data(text.utf8).write(to: input)
        let arguments = ["enrich", input.path, "--base-url", url, "--window", "500"]

        let reference = try await CLI.run(arguments + ["-o", full.path], timeout: 120)
        #expect([0, 1].contains(reference.status))

        let running = try CLI.start(arguments + ["-o", partial.path, "--progress"])
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
          let size =
            (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size]) as? Int
          if (size ?? 0) > 100_000 { break }
          try await Task.sleep(nanoseconds: 20_000_000)
        }
        running.signal(SIGINT)
        let interrupted = try await running.wait(timeout: 60)
        #expect(interrupted.status == 130)
        #expect(interrupted.err.contains("--resume"))
        let partialRecords = try CSVReader.records(in: Data(contentsOf: partial))
        #expect(partialRecords.count > 1)
        #expect(partialRecords.count < 20_001, "the run was not interrupted mid-way")

        // Simulate a torn write too: cut the last row in half.
        let handle = try FileHandle(forUpdating: partial)
        let size = try handle.seekToEnd()
        try handle.truncate(atOffset: size - 7)
        try handle.close()

        let resumed = try await CLI.run(arguments + ["-o", partial.path, "--resume"], timeout: 120)
        #expect([0, 1].contains(resumed.status))
        #expect(resumed.err.contains("resumed after"))
        let expected = try Data(contentsOf: full)
        let actual = try Data(contentsOf: partial)
        #expect(actual.count == expected.count)
        #expect(actual == expected)

        // Resuming a finished run changes nothing.
        let again = try await CLI.run(arguments + ["-o", partial.path, "--resume"], timeout: 60)
        #expect([0, 1].contains(again.status))
        #expect(try Data(contentsOf: partial) == expected)
      }
    }
  }

  @Test func resumeRefusesAnotherFilesOutput() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let input = directory.appendingPathComponent("in.csv")
    let output = directory.appendingPathComponent("out.csv")
    try Data("cep\n01001000\n".utf8).write(to: input)
    try Data("other,header\n1,2\n".utf8).write(to: output)
    let result = try await CLI.run([
      "enrich", input.path, "-o", output.path, "--resume", "--base-url", "http://127.0.0.1:9",
    ])
    #expect(result.status == 2)
    #expect(result.err.contains("cannot resume"))
    let noOutput = try await CLI.run(["enrich", input.path, "--resume"])
    #expect(noOutput.status == 2)
    let same = try await CLI.run(["enrich", input.path, "-o", input.path])
    #expect(same.status == 2)
  }
}
