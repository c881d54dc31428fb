import BrazilianDocuments
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("CSV reader")
struct CSVReaderTests {
  func fields(_ text: String) throws -> [[String]] {
    try CSVReader.records(in: Array(text.utf8)).map(\.fields)
  }

  @Test("RFC 4180: quoted commas, doubled quotes, line breaks; LF and CRLF; BOM")
  func rfc4180() throws {
    #expect(try fields("a,b\n1,2\n") == [["a", "b"], ["1", "2"]])
    #expect(try fields("a,b\r\n1,2") == [["a", "b"], ["1", "2"]])
    #expect(
      try fields("\u{FEFF}cep,x\n\"a,b\",\"say \"\"hi\"\"\"\n") == [
        ["cep", "x"], ["a,b", "say \"hi\""],
      ])
    #expect(try fields("x,\"line1\nline2\",y\n") == [["x", "line1\nline2", "y"]])
    #expect(try fields("a,,\n") == [["a", "", ""]])
    #expect(try fields("\n") == [[""]])
    #expect(try fields("") == [])
    #expect(try fields("\"\"") == [[""]])
    #expect(try fields("\"a\",") == [["a", ""]])
    #expect(try fields("a,") == [["a", ""]])
    #expect(try fields("\"a\",\n") == [["a", ""]])
  }

  @Test("records keep their exact bytes and terminators when asked")
  func rawBytes() throws {
    var reader = CSVReader(keepRawBytes: true)
    reader.append(Array("\"a\"\"\",b\r\nc\nd".utf8))
    reader.finish()
    let first = try #require(try reader.next())
    #expect(String(decoding: first.rawBytes, as: UTF8.self) == "\"a\"\"\",b")
    #expect(first.terminator == [13, 10])
    #expect(try reader.next()?.terminator == [10])
    let last = try #require(try reader.next())
    #expect(last.fields == ["d"])
    #expect(last.terminator.isEmpty)
    #expect(try reader.next() == nil)
  }

  @Test("input split at every possible byte gives the same records")
  func incremental() throws {
    let text = "\u{FEFF}cep,\"x\"\r\n\"01,\"\"2\",b\n\"multi\r\nline\",ç\r\nlast,\"\""
    let whole = try CSVReader.records(in: Array(text.utf8))
    let bytes = Array(text.utf8)
    for split in 0...bytes.count {
      var reader = CSVReader()
      var records: [CSVRecord] = []
      reader.append(bytes[..<split])
      while let record = try reader.next() { records.append(record) }
      reader.append(bytes[split...])
      reader.finish()
      while let record = try reader.next() { records.append(record) }
      #expect(records.map(\.fields) == whole.map(\.fields), "split at \(split)")
    }
  }

  @Test("garbage is a typed error naming the line")
  func garbage() throws {
    #expect(throws: CSVError(reason: .unterminatedQuote, line: 2)) {
      try fields("a\n\"open,b\nc\n")
    }
    #expect(throws: CSVError(reason: .characterAfterClosingQuote, line: 3)) {
      try fields("\"x\r\ny\"\r\"a\"b\r")
    }
    #expect(throws: CSVError(reason: .characterAfterClosingQuote, line: 1)) {
      try fields("\"a\"b,c\n")
    }
    #expect(throws: CSVError(reason: .invalidUTF8, line: 1)) {
      try CSVReader.records(in: [0x61, 0xFF, 0xFE, 0x0A])
    }
    // A cut 4-byte sequence repairs to one U+FFFD of the same length: still refused.
    #expect(throws: CSVError(reason: .invalidUTF8, line: 2)) {
      try CSVReader.records(in: Array("ok\n".utf8) + [0x61, 0xF0, 0x9F, 0x98, 0x0A])
    }
    // A real U+FFFD, or another character encoded with an EF byte, is text like any other.
    let legit = try CSVReader.records(in: Array("S\u{E3}o \u{FFFD} \u{FB01}\n".utf8))
    #expect(legit.first?.fields == ["S\u{E3}o \u{FFFD} \u{FB01}"])
  }

  @Test("a record longer than the cap is refused instead of buffered without end")
  func recordCap() {
    var reader = CSVReader(maxRecordBytes: 1_000)
    reader.append(Array(repeating: UInt8(ascii: "a"), count: 5_000))
    #expect(throws: CSVError(reason: .recordTooLong(limit: 1_000), line: 1)) { try reader.next() }
  }
}

@Suite("Batch answers")
struct BatchAnswerTests {
  @Test("rows are matched by their own cep column, never by position")
  func matchesByCEP() throws {
    let body = """
      uf,cep,localidade,logradouro
      RJ,20040-002,Rio de Janeiro,Avenida Rio Branco
      SP,99999999,Nowhere,Not asked
      SP,01001000,São Paulo,Praça da Sé
      SP,01001000,Wrong duplicate,Ignored
      ,02000000,,
      """
    let found = try Client.decodeBatchRows(
      Data(body.utf8), chunk: ["01001000", "20040002", "02000000"])
    #expect(found.count == 3)
    #expect(found[0]?.logradouro == "Praça da Sé")
    #expect(found[1]?.uf == "RJ")
    #expect(found[2] == nil)
  }

  /// Every record of `bytes` (fed in two parts, split at `split`), or the error that ended
  /// the reading, with `onlyField` set once the first record (the header) is read.
  static func read(_ bytes: [UInt8], split: Int, onlyField: Int?) -> ([CSVRecord], CSVError?) {
    var reader = CSVReader(keepRawBytes: true)
    var records: [CSVRecord] = []
    do {
      for part in [bytes[..<split], bytes[split...]] {
        reader.append(part)
        if part.endIndex == bytes.endIndex { reader.finish() }
        while let record = try reader.next() {
          records.append(record)
          if records.count == 1 { reader.onlyField = onlyField }
        }
      }
    } catch let error as CSVError {
      return (records, error)
    } catch {
      preconditionFailure("CSVReader threw \(error)")
    }
    return (records, nil)
  }

  /// What a seeded run of ``onlyFieldChangesNothingButTheOtherFields(only:)`` found.
  struct OnlyFieldRun: Sendable {
    var difference: String?
    var compared = 0
    var refused = 0
  }

  /// Reads 500 seeded inputs with and without `onlyField = only`; the first difference.
  static func compareOnlyField(_ only: Int) -> OnlyFieldRun {
    var random = SplitMix64(state: 0x0417_F1E1 &+ UInt64(only))
    let pieces: [[UInt8]] = [
      Array("a".utf8), Array("01001-000".utf8), Array("São Paulo".utf8), [0x2C], [0x2C],
      [0x22], [0x22, 0x22], [0x0A], [0x0D, 0x0A], [0x0D], Array(" x ".utf8),
      [0xE2, 0x82, 0xAC], Array("longer than fifteen bytes".utf8),
    ]
    // Bytes that are not UTF-8 on their own, drawn less often.
    let invalid: [[UInt8]] = [[0xC3], [0xFF], [0xED, 0xA0, 0x80]]
    var run = OnlyFieldRun()
    for round in 0..<500 {
      var bytes = Array("id,nome,cep,obs\n".utf8)
      for _ in 0..<Int(random.next() % 40) {
        bytes +=
          random.next() % 32 == 0
          ? invalid[Int(random.next() % UInt64(invalid.count))]
          : pieces[Int(random.next() % UInt64(pieces.count))]
      }
      let split = Int(random.next() % UInt64(bytes.count + 1))
      let (full, fullError) = read(bytes, split: split, onlyField: nil)
      let (some, someError) = read(bytes, split: split, onlyField: only)
      if fullError != nil { run.refused += 1 }
      var expected = full
      for index in expected.indices.dropFirst() {
        expected[index].fields = full[index].fields.indices.map {
          $0 == only ? full[index].fields[$0] : ""
        }
      }
      guard someError == fullError, some == expected else {
        run.difference = "input \(round) (\(bytes)) reads differently with onlyField \(only)"
        return run
      }
      run.compared += some.count
    }
    return run
  }

  @Test(
    "onlyField: the same records, bytes, lines and errors; its field decoded, the others empty",
    arguments: [0, 1, 2, 5])
  func onlyFieldChangesNothingButTheOtherFields(only: Int) async {
    // Seconds of synchronous work in a debug build: off the cooperative pool, where it would
    // hold up every other test's async code (and its deadlines).
    let run = await runOffThePool { Self.compareOnlyField(only) }
    #expect(run.difference == nil)
    // The sequence must reach both outcomes: records compared, and inputs refused.
    #expect(run.compared > 1_200 && run.refused > 120)
  }
}
