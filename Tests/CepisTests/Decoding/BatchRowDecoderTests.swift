import BrazilianDocuments
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

/// The packed `/csv` decoder against the `CSVReader`-based one, its reference: for every body
/// both give the same addresses, or both refuse it. Bodies are drawn from a seeded generator
/// that mixes cep.is's own shape with everything a server or a proxy could send instead.
@Suite("batch answers: the packed decoder agrees with the CSVReader reference")
struct BatchRowDecoderTests {
  /// Bodies per run; `CEPIS_BATCH_DECODER_BODIES` raises it.
  static let bodies =
    ProcessInfo.processInfo.environment["CEPIS_BATCH_DECODER_BODIES"]
    .flatMap(Int.init) ?? 20_000

  static let numbers = (0..<12).map { 1_000_000 + $0 * 7 }
  static let chunk = numbers.map(cepString)

  /// One body: a header in some column order, then rows for asked and unasked CEPs.
  static func body(_ random: inout SplitMix64) -> [UInt8] {
    func draw(_ limit: Int) -> Int { Int(random.next() % UInt64(limit)) }
    let pieces = [
      "Rua A", "", "de 501 ao fim, lado par", "Bloco \"A\"", "São Paulo", "SP", "3550308",
      "linha\nquebrada", "Praça da Sé", "ç", "x\r\ny", " ", "\"", "日本", "🇧🇷",
    ]
    var names = ["cep", "logradouro", "complemento", "bairro", "localidade", "uf", "ibge"]
    if draw(4) == 0 { names.shuffle(using: &random) }
    if draw(10) == 0 { names.append("extra") }
    if draw(20) == 0 { names.removeAll { $0 == ["cep", "localidade", "uf"][draw(3)] } }
    if draw(20) == 0 { names.append("cep") }
    if draw(15) == 0 { names[0] = " CEP " }
    let lineEnd = ["\n", "\r\n", "\r"][draw(3)]
    func field(_ text: String) -> String {
      let quoted = text.contains(where: { ",\"\r\n".contains($0) }) || draw(8) == 0
      return quoted ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
    }
    var text = draw(10) == 0 ? "\u{FEFF}" : ""
    text += names.map(field).joined(separator: ",") + lineEnd
    for _ in 0..<draw(16) {
      var row: [String] = []
      for name in names {
        switch name.trimmingCharacters(in: .whitespaces).lowercased() {
        case "cep":
          let cep = draw(6) == 0 ? cepString(draw(100_000_000)) : chunk[draw(chunk.count)]
          row.append(draw(5) == 0 ? String(cep.prefix(5)) + "-" + cep.suffix(3) : cep)
        case "localidade": row.append(draw(5) == 0 ? "" : pieces[draw(pieces.count)])
        default: row.append(pieces[draw(pieces.count)])
        }
      }
      if draw(15) == 0 { row.removeLast(draw(row.count + 1)) }
      if draw(15) == 0 { row.append("more") }
      text += row.map(field).joined(separator: ",") + lineEnd
    }
    if draw(4) == 0 { text += lineEnd }
    var bytes = Array(text.utf8)
    // Damage: a quote left open, text after a closing quote, bytes that are not UTF-8, a cut.
    switch draw(12) {
    case 0 where !bytes.isEmpty: bytes.insert(UInt8(ascii: "\""), at: draw(bytes.count))
    case 1 where !bytes.isEmpty:
      bytes.insert([0xFF, 0xC0, 0xED, 0xE0, 0x80][draw(5)], at: draw(bytes.count))
    case 2: bytes = Array(bytes.prefix(draw(bytes.count + 1)))
    case 3 where !bytes.isEmpty: bytes[draw(bytes.count)] = UInt8(truncatingIfNeeded: draw(256))
    default: break
    }
    return bytes
  }

  enum Outcome: Equatable {
    case rows([Address?])
    case refused
  }

  static func outcome(_ decode: () throws -> [Address?]) -> Outcome {
    (try? decode()).map(Outcome.rows) ?? .refused
  }

  /// What a seeded run found: the first disagreement, and how many bodies went which way.
  struct Run: Sendable {
    var disagreement: String?
    var packed = 0
    var accepted = 0
  }

  static func compare(bodies: Int) -> Run {
    var random = SplitMix64(state: 0xC5C0_5EED)
    var run = Run()
    for round in 0..<bodies {
      let bytes = body(&random)
      let data = Data(bytes)
      let reference = outcome { try Client.decodeBatchRowsWithReader(data, chunk: chunk) }
      let decoded = outcome { try Client.decodeBatchRows(data, chunk: chunk) }
      // The bulk engine's form, the same chunk as CEP numbers, on every eighth body (the
      // same core; the seeded run's time is shared with every other test).
      let byNumber =
        round % 8 == 0 ? outcome { try Client.decodeBatchRows(data, numbers: numbers) } : decoded
      let text = String(decoding: bytes, as: UTF8.self)
      guard decoded == reference, byNumber == reference else {
        run.disagreement = "body \(round) decodes differently: \(text.debugDescription)"
        return run
      }
      if case .rows = reference { run.accepted += 1 }
      let path = bytes.withUnsafeBufferPointer { Client.packedBatchRows($0, chunk: chunk) }
      guard case .rows(let rows) = path else { continue }
      run.packed += 1
      guard Outcome.rows(rows) == reference else {
        run.disagreement = "body \(round): packed rows differ: \(text.debugDescription)"
        return run
      }
      // Every answer of the packed path is packed, and keyed by its own CEP.
      for (cep, address) in zip(chunk, rows) {
        guard let address else { continue }
        if case .strings = address.text { run.disagreement = "body \(round): unpacked answer" }
        if address.cep != cep || address.localidade.isEmpty {
          run.disagreement = "body \(round): \(address) answers \(cep)"
        }
        if run.disagreement != nil { return run }
      }
    }
    return run
  }

  @Test("seeded bodies: the same answers or the same refusal, and the packed path does the work")
  func agreesWithReference() async {
    let bodies = Self.bodies
    let run = await runOffThePool { Self.compare(bodies: bodies) }
    #expect(run.disagreement == nil)
    // Most bodies are well formed, and those go through the packed path.
    #expect(run.packed > bodies / 2)
    #expect(run.packed <= run.accepted)
  }

  @Test("the UTF-8 check agrees with the standard library's on seeded byte strings")
  func utf8Validation() async {
    let mismatch = await runOffThePool { () -> [UInt8]? in
      var random = SplitMix64(state: 0x0F8)
      let interesting: [UInt8] = [
        0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4,
        0xF5, 0xFF, 0x9F, 0xA0, 0x8F, 0x90,
      ]
      for drawn in 0..<400_000 {
        var bytes: [UInt8] = []
        // Half the strings are short and dense with interesting bytes; half are up to 48
        // bytes, mostly ASCII, so that the check's 8- and 16-byte steps meet a byte that is
        // not ASCII at every offset of a word.
        let long = drawn % 2 == 1
        for _ in 0..<Int(random.next() % (long ? 49 : 14)) {
          let pick = random.next()
          if long && pick % 4 != 0 {
            bytes.append(0x20 + UInt8(truncatingIfNeeded: pick >> 8) % 0x5F)
            continue
          }
          bytes.append(
            pick % 3 == 0
              ? UInt8(truncatingIfNeeded: pick >> 8)
              : interesting[Int((pick >> 8) % UInt64(interesting.count))])
        }
        let expected = String(validating: bytes, as: UTF8.self) != nil
        if bytes.withUnsafeBufferPointer(isValidUTF8) != expected { return bytes }
      }
      return nil
    }
    #expect(mismatch == nil)
  }

  static let sample = #"""
    cep,logradouro,complemento,bairro,localidade,uf,ibge
    01001000,Praça da Sé,"de 501 ao fim, lado ""par""",Sé,São Paulo,SP,3550308

    """#

  @Test("a packed address reads, compares, hashes, encodes and changes like a built one")
  func packedAddressBehaves() throws {
    let found = try Client.decodeBatchRows(Data(Self.sample.utf8), chunk: ["01001000"])
    let packed = try #require(found[0])
    if case .strings = packed.text { Issue.record("the sample should decode packed") }
    let built = Address(
      cep: "01001000", logradouro: "Praça da Sé", complemento: "de 501 ao fim, lado \"par\"",
      bairro: "Sé", localidade: "São Paulo", uf: "SP", ibge: "3550308")
    #expect(packed == built && built == packed)
    for field in AddressTextField.allCases {
      let fromPacked = packed.withUTF8(field) { Array($0) }
      #expect(fromPacked == built.withUTF8(field) { Array($0) })
      #expect(String(decoding: fromPacked, as: UTF8.self) == built.text[field])
    }
    var packedFields: [[UInt8]] = []
    var builtFields: [[UInt8]] = []
    packed.forEachUTF8Field { packedFields.append(Array($0)) }
    built.forEachUTF8Field { builtFields.append(Array($0)) }
    #expect(packedFields == builtFields && packedFields.count == 6)
    #expect(packed.hashValue == built.hashValue)
    #expect(Set([packed, built]).count == 1)
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let encoded = try encoder.encode(packed)
    #expect(try JSONDecoder().decode(Address.self, from: encoded) == built)
    #expect(encoded == (try encoder.encode(built)))

    var changed = packed
    changed.bairro = "Centro"
    #expect(changed.bairro == "Centro" && packed.bairro == "Sé")
    #expect(changed.logradouro == "Praça da Sé" && changed.cep == "01001000")
    #expect(changed != packed)
    changed.bairro = "Sé"
    #expect(changed == packed)
    var other = packed
    other.cep = "01001001"
    #expect(other.cep == "01001001" && other != packed && packed.cep == "01001000")
    #expect(packed.formattedCEP == "01001-000" && packed.geo == nil && packed.source == .cepis)
    // Clearing what a batch row does not have (the cache does, for every answer it stores)
    // leaves it packed: no String is made.
    var cleared = packed
    cleared.geo = nil
    cleared.staleEdition = nil
    guard case .packed = cleared.text else {
      Issue.record("clearing geo and staleEdition unpacked the row")
      return
    }
    #expect(cleared == packed)
    var located = packed
    located.geo = Geo(lat: -23.55, lon: -46.63, raioM: 30, precisao: "logradouro")
    #expect(located.geo?.raioM == 30 && located != packed && packed.geo == nil)
    #expect(located.logradouro == packed.logradouro && located.complemento == packed.complemento)
    located.geo = nil
    #expect(located == packed)
    located.staleEdition = "2026-10"
    #expect(located != packed && located.staleEdition == "2026-10" && packed.staleEdition == nil)
    // The source: cep.is's for a batch row; setting it to cep.is keeps the row packed, another
    // source makes a different answer with the same fields, and each copy keeps its own.
    var resourced = packed
    resourced.source = .cepis
    guard case .packed = resourced.text else {
      Issue.record("setting the source a batch row has unpacked it")
      return
    }
    resourced.source = .viaCEP
    #expect(resourced.source == .viaCEP && packed.source == .cepis && resourced != packed)
    #expect(resourced.logradouro == packed.logradouro && resourced.cep == packed.cep)
    let reencoded = try JSONDecoder().decode(Address.self, from: try encoder.encode(resourced))
    #expect(reencoded == resourced && reencoded.source == .viaCEP)
    resourced.source = .cepis
    #expect(resourced == packed && resourced.hashValue == packed.hashValue)
    // What a million-answer array costs per slot: two words, whatever the fields hold.
    #expect(MemoryLayout<Address>.stride == 16)
    #expect(MemoryLayout<Address?>.stride == 16)
    // And what the run-wide memo of a bulk lookup keeps per CEP: no more than an address.
    #expect(MemoryLayout<LookupResult>.stride <= 16)
    // Its entry per CEP (answer, CEP, ask or age, and two links): half a cache line.
    #expect(LookupMemo.entryStride == 32)
  }

  @Test(
    "an answer's rows share one buffer, each reads its own fields, and one re-packed alone is equal",
    // Streets padded to make the text of the answer's chunk 64 KiB at most (two-byte ends) or
    // more (four-byte ends).
    arguments: [0, 150]
  )
  func rowsShareTheirAnswersBuffer(streetPadding: Int) throws {
    // 500 rows with fields of every length from 0 up, some quoted with doubled quotes, in
    // reverse order of the chunk, a tenth of the CEPs not found (empty localidade) and a tenth
    // not answered at all.
    let numbers = (0..<500).map { 1_000_000 + $0 * 7 }
    var body = "cep,logradouro,complemento,bairro,localidade,uf,ibge\n"
    var expected: [Address?] = Array(repeating: nil, count: numbers.count)
    for (index, number) in numbers.enumerated().reversed() where index % 10 != 3 {
      let street = String(repeating: "R", count: index % 37 + streetPadding)
      let complement = index % 4 == 0 ? "lado \"\(index)\"" : ""
      let town = index % 10 == 7 ? "" : "Cidade \(index) ç"
      let quoted =
        complement.isEmpty
        ? "" : "\"" + complement.replacingOccurrences(of: "\"", with: "\"\"") + "\""
      body += "\(cepString(number)),\(street),\(quoted),B\(index),\(town),SP,\(3_550_000 + index)\n"
      if !town.isEmpty {
        expected[index] = Address(
          cep: cepString(number), logradouro: street, complemento: complement, bairro: "B\(index)",
          localidade: town, uf: "SP", ibge: "\(3_550_000 + index)")
      }
    }
    let found = try Client.decodeBatchRows(Data(body.utf8), numbers: numbers)
    #expect(found == expected)
    let rows = found.compactMap { $0 }
    let chunks = Set(rows.compactMap(\.chunkIdentity))
    #expect(chunks.count == 1, "one buffer for the answer's \(rows.count) rows")
    // Made to the size of the rows found: no room for the CEPs not found or not answered.
    #expect(rows.allSatisfy { $0.chunkRowCapacity == rows.count })
    // Its text: each field and the byte after it. Ends fit two bytes up to 64 KiB.
    let text = rows.reduce(0) { total, row in
      total + 6 + row.logradouro.utf8.count + row.complemento.utf8.count + row.bairro.utf8.count
        + row.localidade.utf8.count + row.uf.utf8.count + row.ibge.utf8.count
    }
    #expect((streetPadding == 0) == (text <= 65_536))
    #expect(rows.allSatisfy { $0.chunkEndWidth == (text <= 65_536 ? 2 : 4) })
    for address in found.compactMap({ $0 }) {
      let alone = try #require(address.repackedAlone)
      #expect(alone == address && alone.hashValue == address.hashValue)
      #expect(alone.chunkIdentity == nil && alone.repackedAlone == nil)
      #expect(alone.text[.complemento] == address.complemento)
    }
  }

  @Test(
    "a chunk's ends take two bytes up to 64 KiB of text and four beyond, and read back each field",
    arguments: [65_535, 65_536, 65_537, 70_000]
  )
  func endWidthAtTheBoundary(textBytes: Int) {
    // Two rows of six fields (each followed by a byte of its own) that fill the text exactly:
    // the last end is textBytes - 1, the largest a chunk of that size holds.
    let lengths = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, textBytes - 12 - 55]
    var writer = PackedChunkWriter(rows: 2, textBytes: textBytes)
    var written: [[String]] = [[], []]
    var packed: [PackedFields] = []
    for row in 0..<2 {
      for field in 0..<6 {
        let byte = UInt8(ascii: "a") + UInt8(row * 6 + field)
        let value = [UInt8](repeating: byte, count: lengths[row * 6 + field])
        value.withUnsafeBufferPointer { writer.append($0) }
        writer.endField()
        written[row].append(String(decoding: value, as: UTF8.self))
      }
      packed.append(writer.endRow())
    }
    for row in 0..<2 {
      #expect(packed[row].chunkEndWidth == (textBytes <= 65_536 ? 2 : 4))
      for field in AddressText.Field.allCases {
        #expect(packed[row][field] == written[row][field.rawValue], "row \(row) \(field)")
      }
    }
  }

  @Test("a CEP number's 8 digits: Swift's own decimal spelling, zero-padded")
  func cepDigits() async {
    let wrong = await runOffThePool { () -> [Int] in
      var random = SplitMix64(state: 0xD161_7500)
      // Every power of ten and its neighbours, the ends of the range, then seeded numbers of
      // every length.
      var numbers = [0, 1, 9, 99_999_999, 10_000_000, 9_999_999]
      var power = 1
      while power <= 10_000_000 {
        numbers += [power - 1, power, power + 1]
        power *= 10
      }
      for _ in 0..<200_000 {
        numbers.append(Int(random.next() % (UInt64(10) << (random.next() % 27))) % 100_000_000)
      }
      // The first few numbers spelt wrong.
      let wrong = numbers.lazy.filter { number in
        let digits = String(number)
        return cepString(number) != String(repeating: "0", count: 8 - digits.count) + digits
      }
      return Array(wrong.prefix(3))
    }
    #expect(wrong.isEmpty)
  }

  @Test("a chunk's path: every CEP as 8 digits, comma-separated, in the chunk's order")
  func batchPathSpellsEachCEP() async {
    #expect(Client.batchPath([]) == "/csv?ceps=")
    #expect(Client.batchPath([0, 1_001_000, 99_999_999]) == "/csv?ceps=00000000,01001000,99999999")
    let wrong = await runOffThePool { () -> [String] in
      var random = SplitMix64(state: 0xBA7C_4FA7)
      var wrong: [String] = []
      for _ in 0..<200 {
        let numbers = (0..<Int(random.next() % 501)).map { _ in Int(random.next() % 100_000_000) }
        let path = Client.batchPath(numbers)
        if path != "/csv?ceps=" + numbers.map(cepString).joined(separator: ",") {
          wrong.append(path)
        }
      }
      return wrong
    }
    #expect(wrong.isEmpty, "\(wrong.prefix(3))")
  }
}
