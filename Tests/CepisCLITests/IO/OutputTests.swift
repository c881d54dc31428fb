import BrazilianDocuments
import Cepis
import CepisSupport
import CepisTestSupport
import Foundation
import Testing

@testable import CepisCommandLine

@Suite("Output formats")
struct OutputTests {
  let address = Address(
    cep: "01310100", logradouro: "Avenida Paulista", complemento: "de 612 a 1510 - lado par",
    bairro: "Bela Vista", localidade: "São Paulo", uf: "SP", ibge: "3550308",
    geo: Geo(lat: -23.56, lon: -46.65, raioM: 50, precisao: "logradouro"))

  @Test func csvQuotingFollowsRFC4180() {
    #expect(csvField("plain") == "plain")
    #expect(csvField("") == "")
    #expect(csvField("a,b") == "\"a,b\"")
    #expect(csvField("say \"hi\"") == "\"say \"\"hi\"\"\"")
    #expect(csvField("two\nlines") == "\"two\nlines\"")
    #expect(csvField("cr\r") == "\"cr\r\"")
    #expect(csvField("São Paulo") == "São Paulo")
    #expect(csvRow(["a", "b,c"]) == "a,\"b,c\"\r\n")
  }

  @Test func jsonEscaping() throws {
    func quoted(_ text: String) -> String { JSONValue.string(text).rendered }
    #expect(quoted("a\"b\\c") == "\"a\\\"b\\\\c\"")
    #expect(quoted("tab\tnl\n\u{01}") == "\"tab\\tnl\\n\\u0001\"")
    #expect(quoted("Praça da Sé") == "\"Praça da Sé\"")
    #expect(quoted("a\u{2028}b\u{2029}\u{2027}") == "\"a\\u2028b\\u2029\u{2027}\"")
    let value = JSONValue.object([
      ("b", .int(1)), ("a", .array([.bool(true), .null, .double(1.5), .double(.nan)])),
    ])
    #expect(value.rendered == "{\"b\":1,\"a\":[true,null,1.5,null]}")
    // Every escape reads back as the text it was written from.
    var text = "\u{2028}é\u{7f}\""
    for scalar in 0..<0x20 { text.unicodeScalars.append(Unicode.Scalar(UInt8(scalar))) }
    let array = JSONValue.array([.string(text)])
    let decoded = try JSONSerialization.jsonObject(with: Data(array.bytes)) as? [String]
    #expect(decoded == [text])
  }

  /// The JSON string writer copies runs of plain bytes whole; a plain reference escapes byte
  /// by byte. Over 200,000 seeded strings drawn from the characters that matter (quotes,
  /// backslashes, every control character, DEL, U+2028/U+2029 and their neighbours U+2020
  /// and U+2027, which share the first two bytes, accents, an emoji), both write the same
  /// bytes. Runs off the concurrency pool (`runOffThePool`).
  @Test func jsonStringMatchesAPlainReference() async {
    let mismatches = await runOffThePool { Self.jsonStringMismatches(count: 200_000) }
    #expect(mismatches.isEmpty, "first strings written differently: \(mismatches)")
  }

  /// The first (at most 5) of `count` seeded strings that `JSONValue.appendString` writes
  /// differently from a plain reference.
  static func jsonStringMismatches(count: Int) -> [String] {
    func reference(_ text: String) -> [UInt8] {
      let hex = Array("0123456789abcdef".utf8)
      var out: [UInt8] = [34]
      var previous: (UInt8, UInt8) = (0, 0)
      for byte in text.utf8 {
        switch byte {
        case 34: out += [92, 34]
        case 92: out += [92, 92]
        case 10: out += [92, 110]
        case 13: out += [92, 114]
        case 9: out += [92, 116]
        case 0..<0x20: out += [92, 117, 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]]
        case 0xA8...0xA9 where previous == (0xE2, 0x80):
          out.removeLast(2)
          out += Array("\\u202".utf8) + [byte == 0xA8 ? 56 : 57]
        default: out.append(byte)
        }
        previous = (previous.1, byte)
      }
      return out + [34]
    }
    var alphabet: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "é", "ç", "\u{7F}"]
    alphabet += [0x2020, 0x2027, 0x2028, 0x2029, 0x202A, 0x1F600].compactMap(Unicode.Scalar.init)
    alphabet += (0..<0x20).map { Unicode.Scalar(UInt8($0)) }
    var random = SplitMix64(state: 0x9E37_79B9_7F4A_7C15)
    func next() -> Int { Int(truncatingIfNeeded: random.next() >> 1) }
    var mismatches: [String] = []
    for _ in 0..<count {
      var text = ""
      for _ in 0..<(next() % 25) { text.unicodeScalars.append(alphabet[next() % alphabet.count]) }
      var written: [UInt8] = []
      JSONValue.appendString(text, to: &written)
      if written != reference(text) && mismatches.count < 5 {
        mismatches.append(text.debugDescription)
      }
    }
    return mismatches
  }

  @Test func resultRecordIsStable() {
    let result = CEPResult(input: "01310-100", resolution: .found(address))
    #expect(result.status == .ok)
    #expect(
      result.jsonText
        == "{\"input\":\"01310-100\",\"cep\":\"01310100\",\"status\":\"ok\","
        + "\"logradouro\":\"Avenida Paulista\",\"complemento\":\"de 612 a 1510 - lado par\","
        + "\"bairro\":\"Bela Vista\",\"localidade\":\"São Paulo\",\"uf\":\"SP\","
        + "\"ibge\":\"3550308\",\"geo\":{\"lat\":-23.56,\"lon\":-46.65,\"raio_m\":50,"
        + "\"precisao\":\"logradouro\"},\"source\":\"cepis\",\"message\":null}")
    #expect(
      result.csvText
        == "01310-100,01310100,ok,Avenida Paulista,de 612 a 1510 - lado par,Bela Vista,"
        + "São Paulo,SP,3550308,-23.56,-46.65,cepis\r\n")
    #expect(
      result.textLine()
        == "01310-100  Avenida Paulista, de 612 a 1510 - lado par, Bela Vista, São Paulo/SP "
        + "(IBGE 3550308) [-23.56, -46.65 ±50 m]")
  }

  @Test func statusLabels() {
    #expect(CEPResult(input: "99999999", resolution: .notFound).status.label == "not_found")
    #expect(CEPResult(input: "abc", resolution: .invalid).status.label == "invalid")
    #expect(CEPResult(input: "abc", resolution: .invalid).cep == nil)
    let failed = CEPResult(
      input: "01001000", resolution: .failed(.networkError(message: "refused")))
    #expect(failed.status.label == "error: network_error")
    #expect(failed.textLine() == "01001-000  error: network_error: network error: refused")
  }

  @Test func exitStatusPrecedence() {
    #expect(ToolStatus.of([.ok, .ok]) == .success)
    #expect(ToolStatus.of([.ok, .notFound]) == .failure)
    #expect(ToolStatus.of([.invalid, .error(kind: "server_error"), .ok]) == .unavailable)
  }

  @Test func formatParsing() throws {
    #expect(try OutputFormat.parse(nil, path: []) == .text)
    #expect(try OutputFormat.parse("NDJSON", path: []) == .ndjson)
    #expect(throws: UsageError.self) { try OutputFormat.parse("jsn", path: ["lookup"]) }
    do {
      _ = try OutputFormat.parse("jsn", path: ["lookup"])
    } catch {
      #expect(error.message.contains("did you mean 'json'?"))
    }
  }

  @Test func recordWriterFormats() {
    for (format, expected) in [
      (OutputFormat.json, "[\n{\"x\":1},\n{\"x\":2}\n]\n"),
      (.ndjson, "{\"x\":1}\n{\"x\":2}\n"),
      (.csv, "x\r\n1\r\n2\r\n"),
      (.text, "one\ntwo\n"),
    ] {
      let console = Console(capturingWithTTY: false)
      var writer = RecordWriter(format: format, console: console, csvHeader: ["x"])
      writer.begin()
      writer.write(text: "one", json: .object([("x", .int(1))]), csv: ["1"])
      writer.write(text: "two", json: .object([("x", .int(2))]), csv: ["2"])
      writer.end()
      #expect(console.capturedOut == expected, "\(format)")
    }
    let console = Console(capturingWithTTY: false)
    let writer = RecordWriter(format: .json, console: console, csvHeader: [])
    writer.begin()
    writer.end()
    #expect(console.capturedOut == "[]\n")
  }

  /// The fields `enrich` appends, through the code that writes them.
  @Test func enrichAppendedFields() {
    let quoted = Address(
      cep: "01001000", logradouro: "Rua \"A\", 1", localidade: "São Paulo", uf: "SP")
    let answer = EnrichAnswer(delimiter: UInt8(ascii: ","), encoding: .utf8)
    var found: [UInt8] = []
    #expect(answer.appendFound(quoted, padded: false, to: &found))
    #expect(String(decoding: found, as: UTF8.self) == ",\"Rua \"\"A\"\", 1\",,,São Paulo,SP,,ok")
    #expect(String(decoding: answer.notFound, as: UTF8.self) == ",,,,,,,not_found")
    #expect(String(decoding: answer.invalid, as: UTF8.self) == ",,,,,,,invalid")
    #expect(
      String(
        decoding: answer.failure(.serverError(message: "x", status: 503)),
        as: UTF8.self) == ",,,,,,,error: server_error")
  }

  /// The same fields in the dialect of a file from Excel: `;` between them (a comma needs no
  /// quotes, a `;` does), Windows-1252 bytes for the accents, `ok_padded` for a 7-digit CEP.
  @Test func enrichAppendedFieldsSemicolonWindows1252() {
    let address = Address(
      cep: "01001000", logradouro: "Praça da Sé; lado ímpar", complemento: "até 1, fim",
      localidade: "São Paulo", uf: "SP")
    let answer = EnrichAnswer(delimiter: UInt8(ascii: ";"), encoding: .windows1252)
    var found: [UInt8] = []
    #expect(answer.appendFound(address, padded: true, to: &found))
    let expected: [UInt8] =
      Array(";\"Pra".utf8) + [0xE7] + Array("a da S".utf8) + [0xE9] + Array("; lado ".utf8)
      + [0xED] + Array("mpar\";at".utf8) + [0xE9] + Array(" 1, fim;;S".utf8) + [0xE3]
      + Array("o Paulo;SP;;ok_padded".utf8)
    #expect(found == expected)
    #expect(String(decoding: answer.notFoundPadded, as: UTF8.self) == ";;;;;;;not_found_padded")
    #expect(
      String(decoding: answer.failure(.serverError(message: "x", status: 503)), as: UTF8.self)
        == ";;;;;;;error: server_error")
    // A character Windows-1252 has not: nothing of the address is written.
    var unencodable: [UInt8] = Array("kept".utf8)
    let foreign = Address(cep: "01001000", logradouro: "Rua Łódź", localidade: "X", uf: "SP")
    #expect(!answer.appendFound(foreign, padded: false, to: &unencodable))
    #expect(unencodable == Array("kept".utf8))
  }

  @Test func cepSetCountsDistinctMembers() {
    let set = CEPSet()
    #expect(!set.contains(0))
    for value in stride(from: 0, to: 100_000_000, by: 99_991) { set.insert(value) }
    #expect(set.count == 1_001)
    #expect(!set.insert(-1) && !set.insert(100_000_000) && !set.contains(100_000_000))
    let insertedAgain = set.insert(99_991)
    #expect(!insertedAgain)
    #expect(set.contains(0) && set.contains(99_991 * 1_000))
    #expect(!set.contains(1))
    #expect(set.count == 1_001)
  }

  @Test func completeRecordsIgnoresAPartialTail() throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("out.csv")
    let cases: [(String, Int, Int)] = [
      ("h\r\na\r\nb\r\n", 3, 9),
      ("h\r\na\r\nb\r", 2, 6),  // cut between CR and LF
      ("h\na\n\"open\nquote", 2, 4),  // cut inside a quoted field
      ("h\na\nb", 2, 4),  // no line end
      ("\u{FEFF}h\na\n", 2, 7),  // BOM counted in the offset
      ("", 0, 0),
    ]
    for (text, count, offset) in cases {
      try Data(text.utf8).write(to: file)
      let result = try EnrichCommand.completeRecords(in: file.path)
      #expect(result.count == count, "\(text.debugDescription)")
      #expect(result.offset == offset, "\(text.debugDescription)")
    }
  }

  @Test func lineSplitter() {
    var lines = LineSplitter()
    lines.feed(Array("a\r\nb\n\nc".utf8))
    #expect(lines.next() == "a")
    #expect(lines.next() == "b")
    #expect(lines.next() == "")
    #expect(lines.next() == nil)
    lines.feed([])
    #expect(lines.next() == "c")
    #expect(lines.next() == nil)
  }

  @Test func progressClock() {
    #expect(Progress.clock(7) == "0:07")
    #expect(Progress.clock(3_725) == "1:02:05")
  }
}

@Suite("In-process commands")
struct InProcessTests {
  func run(_ arguments: [String], env: [String: String] = [:]) async -> (ToolStatus, String, String)
  {
    let console = Console(capturingWithTTY: false)
    let status = await CepisTool.run(arguments, environment: env, console: console)
    return (status, console.capturedOut, console.capturedErr)
  }

  @Test func ufOffline() async {
    let (status, out, err) = await run(["uf", "01001-000", "70040010", "--format", "csv"])
    #expect(status == .success)
    #expect(
      out == "input,cep,status,uf,name,region\r\n01001-000,01001000,ok,SP,São Paulo,Sudeste\r\n"
        + "70040010,70040010,ok,DF,Distrito Federal,Centro-Oeste\r\n")
    #expect(err.isEmpty)
  }

  @Test func usageErrorHasAHintAndAPointer() async {
    let (status, out, err) = await run(["lookup", "--formt", "json", "01001000"])
    #expect(status == .usage)
    #expect(out.isEmpty)
    let lines = err.split(separator: "\n")
    #expect(lines.count == 2)
    #expect(lines.first?.contains("did you mean '--format'?") == true)
    #expect(lines.last == "Try 'cepis lookup --help' for more information.")
  }

  @Test func badNumbersAreUsageErrors() async {
    #expect(await run(["lookup", "--timeout", "abc", "01001000"]).0 == .usage)
    #expect(await run(["lookup", "--attempts", "0", "01001000"]).0 == .usage)
    #expect(await run(["lookup", "--base-url", "ftp://x", "01001000"]).0 == .usage)
    #expect(await run(["health"], env: ["CEPIS_BASE_URL": "not a url"]).0 == .usage)
  }

  @Test func noColorWinsOverATerminal() {
    let console = Console(environment: ["NO_COLOR": "1"])
    #expect(!console.stdoutColor)
    #expect(!console.stderrColor)
  }

  @Test func documentValidation() async {
    let (status, out, err) = await run(["cnpj", "validate", "11.222.333/0001-81", "123"])
    #expect(status == .failure)
    #expect(out == "11.222.333/0001-81\n")
    #expect(err.contains("CNPJ must have 14"))
  }
}

extension CEPResult {
  /// ``appendJSON(to:)``'s bytes, as text.
  var jsonText: String {
    var bytes: [UInt8] = []
    appendJSON(to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// ``appendCSV(to:)``'s bytes, as text.
  var csvText: String {
    var bytes: [UInt8] = []
    appendCSV(to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }
}

@Suite("input files")
struct InputFileTests {
  /// `enrich` and `batch` tell the stream about how many rows a file holds (from the line
  /// ends in its first 64 KiB), so that a cache holding no more answers is read in one pass.
  @Test func estimatedLinesFromTheFirstBlock() throws {
    let folder = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    do {
      let lines = folder.appendingPathComponent("lines.csv")
      // 100,000 lines of 10 to 50 bytes, in a repeating pattern: about 3 MB.
      var text = ""
      for index in 0..<100_000 { text += String(repeating: "x", count: 9 + index % 41) + "\n" }
      try Data(text.utf8).write(to: lines)
      let file = try InputFile(path: lines.path)
      defer { file.close() }
      let estimate = file.estimatedLines()
      #expect(abs(estimate - 100_000) < 2_000, "estimated \(estimate)")
      // The estimate leaves the file where it was: the first line is still read first.
      #expect(try file.read(max: 10) == Array("xxxxxxxxx\n".utf8))

      let oneLine = folder.appendingPathComponent("one.csv")
      try Data(String(repeating: "y", count: 100_000).utf8).write(to: oneLine)
      let single = try InputFile(path: oneLine.path)
      defer { single.close() }
      #expect(single.estimatedLines() == 0)
    }
  }
}
