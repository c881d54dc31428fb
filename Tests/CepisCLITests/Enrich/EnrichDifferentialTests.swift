import BrazilianDocuments
import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import CepisCommandLine

/// `cepis enrich` against CepisMock, every output row compared with the mock's own data for
/// that row's CEP: with memos smaller than, equal to and larger than the file's distinct CEPs
/// (around the memo's index growths at 717 and 1,434 entries, and around the chunk size),
/// with a small read-ahead (partial chunks) and the default one, with and without failing
/// chunks. A failed row carries `error: …` and no address; no row ever carries another CEP's
/// address. (Issue 16: with a memo of 1,000 or 1,999, a few rows did.)
@Suite("cepis enrich, every row against the mock's data", .serialized)
struct EnrichDifferentialTests {
  /// One configuration of a run.
  struct Case: Sendable, CustomTestStringConvertible {
    var memo: Int
    var window: Int?
    var failingChunks: Bool
    /// The file as Excel saves it in a Brazilian locale: `;`, CRLF, Windows-1252, the CEPs
    /// of the first 10 million without their leading zero.
    var excel = false

    var testDescription: String {
      "memo \(memo), window \(window.map(String.init) ?? "default")"
        + (failingChunks ? ", failing chunks" : "") + (excel ? ", Excel's dialect" : "")
    }
  }

  /// Rows in the file: 8,000 (2,000 distinct CEPs, so that memos of 1,000 and 1,999 are
  /// smaller than the file) in the plain test run, which shares two cores with every other
  /// suite; `CEPIS_ENRICH_DIFF_ROWS` sets another. CI runs it on the trait build alone at
  /// 2,000 rows over both transports, `Scripts/long-checks` at 100,000 on both builds
  /// (`Scripts/enrich-differential`), the sanitizer runs at 4,000.
  static let rows =
    ProcessInfo.processInfo.environment["CEPIS_ENRICH_DIFF_ROWS"].flatMap(Int.init) ?? 8_000
  /// Distinct CEPs: a quarter of the rows, of which one in 20 does not exist.
  static var distinct: Int { max(1, rows / 4) }

  static let cases: [Case] = {
    let memos = [0, 1, 7, 499, 500, 501, 1_000, 1_999, distinct + 1]
    return memos.flatMap { memo in
      [nil, 100].flatMap { window in
        [false, true].map { Case(memo: memo, window: window, failingChunks: $0) }
      }
    } + [
      Case(memo: 499, window: 100, failingChunks: false, excel: true),
      Case(memo: distinct + 1, window: nil, failingChunks: true, excel: true),
    ]
  }()

  /// The CEPs of the file, and the mock's data: each address unique to its CEP in a field
  /// that enrich writes (a street, or — for the empty streets — the bairro), with quoted,
  /// empty, long and non-ASCII fields.
  static let ceps: [Int] = (0..<distinct).map { ($0 % 2 == 0 ? 1_000_000 : 10_000_000) + $0 * 19 }

  static let dataset: MockDataset = {
    var addresses: [MockAddress] = []
    for (k, value) in ceps.enumerated() where k % 20 != 19 {
      let street: String
      switch k % 17 {
      case 0: street = ""
      case 1: street = "Rua \"\(k)\", lado \(value % 7)"
      case 2: street = "Avenida \(k) " + String(repeating: "longa ", count: 40 + k % 50)
      case 3: street = "Travessa\n\(k)"
      default: street = "Rua \(k)"
      }
      addresses.append(
        MockAddress(
          cep: cepString(value), logradouro: street, complemento: k % 5 == 0 ? "até \(k)" : "",
          bairro: "Bairro \(k)", localidade: "Cidade \(value % 101)",
          uf: k % 3 == 0 ? "RJ" : "SP", ibge: String(3_550_308 + k % 9)))
    }
    return MockDataset(addresses: addresses)
  }()

  /// The input: every distinct CEP about four times, shuffled with a fixed seed so that the
  /// repeats of a CEP land far apart; every 97th row masked (`01001-000` form).
  static let input: (text: String, ceps: [String]) = {
    var values = (0..<rows).map { ceps[$0 % ceps.count] }
    var random = SplitMix64(state: 16)
    for index in values.indices.reversed() where index > 0 {
      values.swapAt(index, Int(random.next() % UInt64(index + 1)))
    }
    var text = "id,cep\n"
    var written: [String] = []
    for (index, value) in values.enumerated() {
      let digits = cepString(value)
      let cep = index % 97 == 0 ? digits.prefix(5) + "-" + digits.suffix(3) : digits
      written.append(String(cep))
      text += "\(index),\(cep)\n"
    }
    return (text, written)
  }()

  /// ``input`` as Excel saves it: `nome;cep` with CRLF, a name with accents (one quoted, with
  /// a `;` inside) in Windows-1252, a CEP below 10,000,000 written as its 7 digits.
  static let excelInput: (bytes: [UInt8], cells: [String]) = {
    var bytes = Array("nome;CEP\r\n".utf8)
    var cells: [String] = []
    for (index, cep) in input.ceps.enumerated() {
      let cell = cep.hasPrefix("0") && !cep.contains("-") ? String(cep.dropFirst()) : cep
      cells.append(cell)
      let name = index % 3 == 0 ? "\"Jos\u{E9}; \(index)\"" : "Concei\u{E7}\u{E3}o \(index)"
      bytes += name.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
      bytes += Array(";\(cell)\r\n".utf8)
    }
    return (bytes, cells)
  }()

  static func fields(_ address: MockAddress) -> [String] {
    [
      address.logradouro, address.complemento, address.bairro, address.localidade, address.uf,
      address.ibge,
    ]
  }

  @Test(arguments: cases, cliTransports)
  func everyRowCarriesItsOwnCEPsAnswer(_ run: Case, transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      var configuration = MockServer.Configuration(dataset: Self.dataset)
      if run.failingChunks {
        // A third of the batch requests fail (one attempt each, so they stay failed), and
        // some answers come back reordered, short, duplicated or padded.
        configuration.chaos = MockChaos(seed: UInt64(run.memo) &+ 99, rate: 0.35)
      }
      try await withMockServer(configuration) { server in
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.csv")
        let output = directory.appendingPathComponent("out.csv")
        if run.excel {
          try Data(Self.excelInput.bytes).write(to: input)
        } else {
          try Data(Self.input.text.utf8).write(to: input)
        }
        var arguments = [
          "enrich", input.path, "-o", output.path, "--base-url", server.baseURL.absoluteString,
          "--memo", String(run.memo), "--attempts", run.failingChunks ? "1" : "3",
        ]
        if let window = run.window { arguments += ["--window", String(window)] }
        let result = try await CLI.run(arguments, timeout: 300)

        let written = try [UInt8](Data(contentsOf: output))
        var reader = CSVReader(
          separator: UInt8(ascii: run.excel ? ";" : ","), encoding: run.excel ? .windows1252 : .utf8
        )
        reader.append(written)
        reader.finish()
        var records: [CSVRecord] = []
        while let record = try reader.next() { records.append(record) }
        try #require(records.count == Self.input.ceps.count + 1)
        if run.excel {
          // The input's bytes and line ends, and Windows-1252 in the appended fields too.
          #expect(!written.contains(0xC3))
          #expect(records.allSatisfy { $0.terminator == [13, 10] })
        }
        var counts: [String: Int] = [:]
        for (index, record) in records.dropFirst().enumerated() {
          let cep = Self.input.ceps[index]
          try #require(record.fields.count == 9, "row \(index)")
          if run.excel {
            #expect(record.fields[1] == Self.excelInput.cells[index], "row \(index)")
          } else {
            #expect(record.fields[0] == String(index) && record.fields[1] == cep, "row \(index)")
          }
          var status = record.fields[8]
          if run.excel && Self.excelInput.cells[index].count == 7 {
            // A 7-digit CEP is marked; the mark goes, and the row is judged as any other.
            #expect(status.hasSuffix("_padded") || status.hasPrefix("error: "), "row \(index)")
            if status.hasSuffix("_padded") { status.removeLast("_padded".count) }
          }
          let answer = Array(record.fields[2...7])
          switch status {
          case "ok":
            let truth = server.dataset.address(for: cep)
            #expect(truth.map(Self.fields) == answer, "row \(index), CEP \(cep)")
          case "not_found":
            #expect(server.dataset.address(for: cep) == nil, "row \(index), CEP \(cep)")
            #expect(answer.allSatisfy { $0.isEmpty })
          default:
            let failedAsAllowed = run.failingChunks && status.hasPrefix("error: ")
            #expect(failedAsAllowed, "row \(index): \(status)")
            #expect(answer.allSatisfy { $0.isEmpty }, "row \(index): a failed row has no address")
          }
          counts[status.hasPrefix("error: ") ? "error" : status, default: 0] += 1
        }
        // Some CEPs do not exist (1); a failed chunk makes it 3.
        #expect(result.status == (counts["error", default: 0] > 0 ? 3 : 1), "\(result.err)")
        // Without failures the run answered (nearly) everything; with them, how many rows fail
        // depends on which requests the seeded chaos hits (a few large chunks can take every
        // row), and what matters is checked above: no row carries another CEP's answer.
        if !run.failingChunks {
          #expect(counts["ok", default: 0] > Self.rows * 9 / 10)
          #expect(counts["error", default: 0] == 0)
          if run.memo > Self.distinct && run.window == nil {
            // Every distinct CEP asked once: the fewest requests.
            let batches = server.requests.filter { $0.path.hasSuffix("/csv") }.count
            #expect(batches == (Self.distinct + Client.maxBatch - 1) / Client.maxBatch)
          }
        }
      }
    }
  }
}
