import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import CepisCommandLine
@testable import CepisSupport

/// `cepis enrich` and `cepis batch` over files written the way Excel writes them: `;` between
/// fields, CRLF, Windows-1252, quoted fields with `;` inside, CEPs that lost their leading
/// zero. Every output row is checked against CepisMock's data for its own CEP, and the output
/// bytes against the input's dialect.
@Suite("Files from Excel", .serialized)
struct ExcelFileTests {
  /// CEPs of greater São Paulo (a leading 0) and others, with accents, a `;` and a `,` in
  /// the fields enrich writes.
  static let dataset = MockDataset(addresses: addresses)

  static let addresses = [
    MockAddress(
      cep: "01001000", logradouro: "Praça da Sé", complemento: "lado ímpar", bairro: "Sé",
      localidade: "São Paulo", uf: "SP", ibge: "3550308"),
    MockAddress(
      cep: "04538133", logradouro: "Avenida Brigadeiro Faria Lima; torre 2",
      complemento: "de 3253, lado ímpar", bairro: "Itaim Bibi", localidade: "São Paulo",
      uf: "SP", ibge: "3550308"),
    MockAddress(
      cep: "09010000", logradouro: "Rua “Coronel” Oliveira Lima", complemento: "",
      bairro: "Centro", localidade: "Santo André", uf: "SP", ibge: "3547809"),
    MockAddress(
      cep: "20040002", logradouro: "Rua da Assembleia", complemento: "até 10", bairro: "Centro",
      localidade: "Rio de Janeiro", uf: "RJ", ibge: "3304557"),
  ]

  /// One way of saving the same file.
  struct Dialect: Sendable, CustomTestStringConvertible {
    var delimiter: Character
    var windows1252: Bool
    var byteOrderMark: Bool
    var lineEnd: String

    var testDescription: String {
      let separator = delimiter == "\t" ? "tab" : String(delimiter)
      let encoding = windows1252 ? "Windows-1252" : byteOrderMark ? "UTF-8 BOM" : "UTF-8"
      return "'\(separator)', \(encoding), \(lineEnd == "\r\n" ? "CRLF" : "LF")"
    }

    var delimiterByte: UInt8 { delimiter.asciiValue ?? UInt8(ascii: ",") }

    func encode(_ text: String) -> [UInt8] {
      guard windows1252 else { return Array(text.utf8) }
      return text.unicodeScalars.map { Windows1252.byte(for: $0) ?? UInt8(ascii: "?") }
    }
  }

  static let dialects: [Dialect] = [
    Dialect(delimiter: ";", windows1252: true, byteOrderMark: false, lineEnd: "\r\n"),
    Dialect(delimiter: ";", windows1252: false, byteOrderMark: true, lineEnd: "\r\n"),
    Dialect(delimiter: ";", windows1252: false, byteOrderMark: false, lineEnd: "\n"),
    Dialect(delimiter: "\t", windows1252: true, byteOrderMark: false, lineEnd: "\r\n"),
    Dialect(delimiter: ",", windows1252: true, byteOrderMark: false, lineEnd: "\n"),
  ]

  /// The rows of the file: a name (accents, a quoted `;`), the CEP cell as Excel left it, and
  /// the 8 digits it stands for (`nil`: not a CEP).
  static let rows: [(name: String, cell: String, cep: String?, padded: Bool)] = [
    ("José da Silva", "1001000", "01001000", true),
    ("\"Conceição; Ltda.\"", "04538-133", "04538133", false),
    ("Ângela", " 9010000 ", "09010000", true),
    ("Ação Social", "20040002", "20040002", false),
    ("Sem CEP", "100100", nil, false),
    ("Não existe", "9999999", "09999999", true),
  ]

  static func input(_ dialect: Dialect) -> (bytes: [UInt8], rows: [[UInt8]]) {
    let separator = String(dialect.delimiter)
    var rows = [dialect.encode(["Nome", "CEP ", "Cidade"].joined(separator: separator))]
    for row in Self.rows {
      rows.append(dialect.encode([row.name, row.cell, "São Paulo"].joined(separator: separator)))
    }
    var bytes: [UInt8] = dialect.byteOrderMark ? [0xEF, 0xBB, 0xBF] : []
    for row in rows { bytes += row + Array(dialect.lineEnd.utf8) }
    return (bytes, rows)
  }

  static func fields(_ address: MockAddress) -> [String] {
    [
      address.logradouro, address.complemento, address.bairro, address.localidade, address.uf,
      address.ibge,
    ]
  }

  @Test(arguments: dialects)
  func enrichKeepsTheDialectAndAnswersEveryRowForItsOwnCEP(_ dialect: Dialect) async throws {
    try await withMockServer(.init(dataset: Self.dataset)) { server in
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let inputURL = directory.appendingPathComponent("clientes.csv")
      let outputURL = directory.appendingPathComponent("saida.csv")
      let input = Self.input(dialect)
      try Data(input.bytes).write(to: inputURL)
      let result = try await CLI.run([
        "enrich", inputURL.path, "-o", outputURL.path, "--base-url",
        server.baseURL.absoluteString, "--format", "json",
      ])
      #expect(result.status == 1, "\(result.err)")  // a row is invalid, one not found
      let noticed = result.err.contains("read as Windows-1252")
      #expect(noticed == dialect.windows1252, "\(result.err)")
      let output = try [UInt8](Data(contentsOf: outputURL))

      // The bytes: the BOM kept, each line starting with the input's own bytes, then the
      // appended fields after the same delimiter, then the input's line end.
      var rest = output[...]
      if dialect.byteOrderMark {
        #expect(rest.starts(with: [0xEF, 0xBB, 0xBF]))
        rest = rest.dropFirst(3)
      }
      let lineEnd = Array(dialect.lineEnd.utf8)
      let lines = rest.split(separator: lineEnd.last ?? 10, omittingEmptySubsequences: true)
      try #require(lines.count == input.rows.count)
      for (line, original) in zip(lines, input.rows) {
        #expect(line.starts(with: original + [dialect.delimiterByte]))
        if lineEnd.count == 2 { #expect(line.last == 13) }
      }
      // Windows-1252 through and through: no UTF-8 lead byte of an accented letter.
      if dialect.windows1252 { #expect(!output.contains(0xC3)) }
      let encoding: CSVEncoding = dialect.windows1252 ? .windows1252 : .utf8
      var reader = CSVReader(separator: dialect.delimiterByte, encoding: encoding)
      reader.append(output)
      reader.finish()
      var records: [CSVRecord] = []
      while let record = try reader.next() { records.append(record) }
      try #require(records.count == Self.rows.count + 1)
      #expect(
        Array(records[0].fields.suffix(7)) == [
          "logradouro", "complemento", "bairro", "localidade", "uf", "ibge", "cepis_status",
        ])
      for (row, record) in zip(Self.rows, records.dropFirst()) {
        try #require(record.fields.count == 10, "\(row.name)")
        let appended = Array(record.fields[3...8])
        let status = record.fields[9]
        guard let cep = row.cep else {
          #expect(status == "invalid")
          continue
        }
        let suffix = row.padded ? "_padded" : ""
        if let truth = server.dataset.address(for: cep) {
          #expect(status == "ok" + suffix, "\(row.name)")
          #expect(appended == Self.fields(truth), "\(row.name), CEP \(cep)")
          // The accents in the appended fields are the input's encoding's bytes.
          let line = Array(lines[record.line - 1])
          let city = [dialect.delimiterByte] + dialect.encode(truth.localidade)
          #expect(line.contains(city + [dialect.delimiterByte]), "\(row.name)")
        } else {
          #expect(status == "not_found" + suffix, "\(row.name)")
          #expect(appended.allSatisfy { $0.isEmpty })
        }
      }
      let summary = result.out
      #expect(summary.contains("\"padded\":3"), "\(summary)")
      #expect(summary.contains("\"found\":4") && summary.contains("\"not_found\":1"))
    }
  }

  @Test func outputEncodingUTF8ConvertsAWindows1252File() async throws {
    try await withMockServer(.init(dataset: Self.dataset)) { server in
      let dialect = Self.dialects[0]
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let inputURL = directory.appendingPathComponent("in.csv")
      let outputURL = directory.appendingPathComponent("out.csv")
      try Data(Self.input(dialect).bytes).write(to: inputURL)
      let result = try await CLI.run([
        "enrich", inputURL.path, "-o", outputURL.path, "--base-url",
        server.baseURL.absoluteString, "--encoding", "latin1", "--output-encoding", "utf-8",
      ])
      #expect(result.status == 1, "\(result.err)")
      #expect(!result.err.contains("read as Windows-1252"))  // said, not detected
      let output = try Data(contentsOf: outputURL)
      let text = try #require(String(data: output, encoding: .utf8))
      #expect(text.hasPrefix("Nome;CEP ;Cidade;logradouro;"))
      #expect(text.contains("José da Silva;1001000;São Paulo;Praça da Sé;lado ímpar;Sé;São Paulo"))
      #expect(text.contains("\"Avenida Brigadeiro Faria Lima; torre 2\";de 3253, lado ímpar;"))
      #expect(text.contains("Rua “Coronel” Oliveira Lima"))
    }
  }

  @Test func aByteNeitherUTF8NorWindows1252StopsAtItsLine() async throws {
    try await withMockServer(.init(dataset: Self.dataset)) { server in
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let inputURL = directory.appendingPathComponent("in.csv")
      let outputURL = directory.appendingPathComponent("out.csv")
      var bytes = Array("nome;cep\r\nJos".utf8) + [0xE9] + Array(";1001000\r\n".utf8)
      bytes += Array("Ana;20040002\r\nX".utf8) + [0x81] + Array(";01001000\r\nB;01001000\r\n".utf8)
      try Data(bytes).write(to: inputURL)
      let result = try await CLI.run([
        "enrich", inputURL.path, "-o", outputURL.path, "--base-url",
        server.baseURL.absoluteString,
      ])
      #expect(result.status == 1)
      #expect(result.err.contains("CSV line 4: byte 0x81"), "\(result.err)")
      let output = try [UInt8](Data(contentsOf: outputURL))
      let lines = output.split(separator: 10)
      // The header and the two rows before the bad one, nothing of it or after it.
      #expect(lines.count == 3)
      #expect(!output.contains(0x81))
      #expect(lines.last?.starts(with: Array("Ana;20040002;".utf8)) == true)
    }
  }

  @Test func twoCEPColumnsAreAUsageError() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let inputURL = directory.appendingPathComponent("in.csv")
    try Data("nome;Cep;CÉP \r\na;01001000;01001000\r\n".utf8).write(to: inputURL)
    for command in ["enrich", "batch"] {
      let result = try await CLI.run([command, inputURL.path, "--base-url", "http://127.0.0.1:1"])
      #expect(result.status == 2, "\(command)")
      #expect(result.err.contains("'Cep' and 'CÉP '"), "\(command): \(result.err)")
    }
  }

  @Test func strictCEPKeepsSevenDigitsInvalid() async throws {
    try await withMockServer(.init(dataset: Self.dataset)) { server in
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let inputURL = directory.appendingPathComponent("in.csv")
      try Data("nome;cep\r\nA;1001000\r\nB;01001000\r\n".utf8).write(to: inputURL)
      let result = try await CLI.run([
        "enrich", inputURL.path, "--base-url", server.baseURL.absoluteString, "--strict-cep",
      ])
      #expect(result.status == 1)
      let lines = result.out.split(separator: "\r\n").map(String.init)
      #expect(lines.count == 3)
      #expect(lines[1] == "A;1001000;;;;;;;invalid")
      #expect(lines[2].hasSuffix(";ok"))
      #expect(result.err.contains("1 invalid") && !result.err.contains("leading 0"))
    }
  }

  @Test func aFoundAddressWindows1252CannotHoldIsMarkedUnencodable() async throws {
    var addresses = Self.addresses
    addresses.append(
      MockAddress(
        cep: "30110000", logradouro: "Rua Łódź", complemento: "", bairro: "Centro",
        localidade: "Belo Horizonte", uf: "MG", ibge: "3106200"))
    try await withMockServer(.init(dataset: MockDataset(addresses: addresses))) { server in
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let inputURL = directory.appendingPathComponent("in.csv")
      let bytes = Array("nome;cep\r\nJos".utf8) + [0xE9] + Array(";30110000\r\nA;1001000\r\n".utf8)
      try Data(bytes).write(to: inputURL)
      let result = try await CLI.run([
        "enrich", inputURL.path, "--base-url", server.baseURL.absoluteString,
      ])
      #expect(result.status == 1)
      let lines = result.stdout.split(separator: 10).map { [UInt8]($0) }
      #expect(lines.count == 3)
      #expect(lines[1] == Array("Jos".utf8) + [0xE9] + Array(";30110000;;;;;;;unencodable\r".utf8))
      #expect(String(decoding: lines[2], as: UTF8.self).hasSuffix(";3550308;ok_padded\r"))
      #expect(result.err.contains("1 found rows were marked 'unencodable'"), "\(result.err)")
    }
  }

  @Test func batchReadsTheCEPColumnOfAFileFromExcel() async throws {
    try await withMockServer(.init(dataset: Self.dataset)) { server in
      let dialect = Self.dialects[0]
      let result = try await CLI.run(
        ["batch", "-", "--base-url", server.baseURL.absoluteString, "--format", "csv"],
        stdin: Data(Self.input(dialect).bytes))
      #expect(result.status == 1, "\(result.err)")
      let records = try CSVReader.records(in: result.stdout)
      try #require(records.count == Self.rows.count + 1)
      for (row, record) in zip(Self.rows, records.dropFirst()) {
        #expect(record.fields[0] == row.cell)
        #expect(record.fields[1] == (row.cep ?? ""))
        let suffix = row.padded ? "_padded" : ""
        if let cep = row.cep, let truth = server.dataset.address(for: cep) {
          #expect(record.fields[2] == "ok" + suffix)
          #expect(Array(record.fields[3...8]) == Self.fields(truth))
        } else {
          #expect(record.fields[2] == (row.cep == nil ? "invalid" : "not_found" + suffix))
        }
      }
    }
  }

  @Test func batchLinesStayLinesAndStrictCEPHolds() async throws {
    try await withMockServer(.init(dataset: Self.dataset)) { server in
      let base = ["batch", "--base-url", server.baseURL.absoluteString, "--format", "csv"]
      let lenient = try await CLI.run(base, stdin: Data("1001000\n01001000\n".utf8))
      let strict = try await CLI.run(base + ["--strict-cep"], stdin: Data("1001000\n".utf8))
      let records = try CSVReader.records(in: lenient.stdout)
      #expect(records.map { $0.fields[2] } == ["status", "ok_padded", "ok"])
      #expect(records[1].fields[1] == "01001000")
      let strictRecords = try CSVReader.records(in: strict.stdout)
      #expect(strictRecords[1].fields[2] == "invalid")
    }
  }

  // MARK: - Detection, unit by unit

  @Test(arguments: [
    ("nome,cep,cidade", ","), ("nome;cep;cidade", ";"), ("nome\tcep\tcidade", "\t"),
    ("\"Silva, João\";cep", ";"), ("cep", ","), ("a;b,c", ","), ("a;b;c,d\nx,y,z,w", ";"),
  ])
  func delimiterOfAHeaderLine(_ header: String, _ expected: Character) {
    let detected = DialectDetection.delimiter(ofHeader: Array(header.utf8)[...])
    #expect(detected == expected.asciiValue)
  }

  @Test(arguments: [
    (Array("cep\n01001000".utf8), CSVEncoding?.none),
    (Array("S\u{E3}o".utf8), .utf8),
    ([0x53, 0xE3, 0x6F], .windows1252),
    ([0x4A, 0x6F, 0x73, 0xE9, 0x3B], .windows1252),
  ])
  func encodingOfASample(_ sample: [UInt8], _ expected: CSVEncoding?) {
    #expect(DialectDetection.encoding(ofSample: sample[...], complete: true) == expected)
  }

  /// A file's first non-ASCII byte decides, however far in it is (here past the first read).
  @Test(arguments: [
    (Array("S\u{E3}o".utf8), CSVEncoding?.some(.utf8)), ([0xE3], .windows1252), ([], nil),
  ])
  func encodingOfAFile(_ tail: [UInt8], _ expected: CSVEncoding?) throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("f.csv")
    let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 70_001) + tail + Array(";x\n".utf8)
    try Data(bytes).write(to: url)
    let file = try InputFile(path: url.path)
    defer { file.close() }
    #expect(DialectDetection.encoding(ofFile: file.fd, size: bytes.count) == expected)
  }

  @Test func aUTF8CharacterCutAtTheEndOfASampleIsStillUTF8() {
    let sample = Array("Jo\u{E3}o S".utf8) + [0xC3]
    #expect(DialectDetection.encoding(ofSample: sample[...], complete: false) == .utf8)
    #expect(DialectDetection.encoding(ofSample: sample[...], complete: true) == .windows1252)
  }

  @Test(arguments: ["CEP", "Cep ", "cep", "CÉP", " c e p"])
  func cepColumnNamesFold(_ name: String) throws {
    #expect(try CEPColumn.find(in: ["nome", name], named: nil, file: "f", path: []) == 1)
  }

  @Test(arguments: [
    ("1001000", 1_001_000), (" 1001000 ", 1_001_000), ("\t9999999", 9_999_999),
    ("01001000", nil), ("100100", nil), ("1001-000", nil), ("10 01000", nil), ("", nil),
  ])
  func sevenDigitCells(_ cell: String, _ expected: Int?) {
    #expect(paddedCEPNumber(ofField: cell) == expected)
  }

  @Test func windows1252RoundTripsItsCharacters() throws {
    for byte in UInt8(0x20)...UInt8(0xFF) where Windows1252.isDefined(byte) {
      let scalar = try #require(Windows1252.scalar(byte))
      #expect(Windows1252.byte(for: scalar) == byte)
    }
    #expect([0x81, 0x8D, 0x8F, 0x90, 0x9D].allSatisfy { !Windows1252.isDefined($0) })
    #expect(Windows1252.decode([0x80, 0x93, 0xE7]) == "€“ç")
  }
}
