import BrazilianDocuments
import CepisMock
import Foundation

/// The synthetic range CepisMock serves: a CEP exists iff `value % 10 != 9`.
let syntheticLower = 10_000_000
let syntheticUpper = 19_999_999

func cepDigits(_ value: Int) -> String {
  let text = String(value)
  return String(repeating: "0", count: max(0, 8 - text.count)) + text
}

func cepMasked(_ value: Int) -> String {
  let digits = cepDigits(value)
  return "\(digits.prefix(5))-\(digits.suffix(3))"
}

/// A CEP input as users type them: unmasked, masked, or with stray spaces.
func cepInput(_ value: Int, style: Int) -> String {
  switch style % 4 {
  case 0, 1: return cepDigits(value)
  case 2: return cepMasked(value)
  default: return " \(cepMasked(value)) "
  }
}

/// Malformed CEPs of the kinds real files hold; none of them may ever reach the API, through
/// the library or `cepis enrich` (which reads seven digits as a CEP that lost its leading
/// zero, so none here has seven).
let malformedSamples = [
  "", "123456", "123456789", "abcde-fgh", "01310-10", "0131O-100", "01310--1000",
  "n/a", "01310100x", "١٢٣٤٥٦٧٨", "０１３１０１００", "13.010-00a",
]

/// A workload with `duplicateShare` of its inputs repeating an earlier valid CEP (in another
/// spelling half the time) and `malformedShare` malformed ones; the rest are fresh CEPs.
struct MixedWorkload {
  var inputs: [String] = []
  /// Distinct valid CEP values, in first-seen order.
  var distinct: [Int] = []

  init(count: Int, duplicateShare: Double, malformedShare: Double, seed: UInt64) {
    var random = SplitMix64(state: seed)
    var seen = Set<Int>()
    inputs.reserveCapacity(count)
    for index in 0..<count {
      let draw = Double(random.next() % 1_000_000) / 1_000_000
      if draw < malformedShare {
        inputs.append(malformedSamples[Int(random.next() % UInt64(malformedSamples.count))])
      } else if draw < malformedShare + duplicateShare, !distinct.isEmpty {
        // Mostly recent repeats (files are often sorted), some from anywhere.
        let window = min(distinct.count, 3_000)
        let pick =
          random.next() % 4 == 0
          ? distinct[Int(random.next() % UInt64(distinct.count))]
          : distinct[distinct.count - 1 - Int(random.next() % UInt64(window))]
        inputs.append(cepInput(pick, style: Int(random.next() % 4)))
      } else {
        var value: Int
        repeat {
          value = syntheticLower + Int(random.next() % UInt64(syntheticUpper - syntheticLower + 1))
        } while seen.contains(value)
        seen.insert(value)
        distinct.append(value)
        inputs.append(cepInput(value, style: index))
      }
    }
  }

  var minimumRequests: Int { (distinct.count + 499) / 500 }
}

/// The bulk workload: `count` distinct CEPs, masked and unmasked, about 10 % of which do not
/// exist (values ending in 9).
func bulkWorkload(count: Int) -> [String] {
  precondition(count <= syntheticUpper - syntheticLower + 1)
  var inputs: [String] = []
  inputs.reserveCapacity(count)
  for index in 0..<count {
    let value = syntheticLower + index
    inputs.append(index % 5 == 0 ? cepMasked(value) : cepDigits(value))
  }
  return inputs
}

/// The exact `/csv` URLs `lookupMany` sends for `inputs` (distinct CEPs in first-seen order,
/// 500 a request), for the curl/wrk baseline.
func batchURLs(base: String, inputs: [String]) -> [String] {
  var seen = Set<String>()
  var distinct: [String] = []
  for input in inputs {
    let digits = input.utf8.filter { $0 >= 48 && $0 <= 57 }
    guard digits.count == 8,
      input.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 32 })
    else { continue }
    let cep = String(decoding: digits, as: UTF8.self)
    if seen.insert(cep).inserted { distinct.append(cep) }
  }
  var base = base
  while base.hasSuffix("/") { base.removeLast() }
  return stride(from: 0, to: distinct.count, by: 500).map {
    base + "/csv?ceps=" + distinct[$0..<min($0 + 500, distinct.count)].joined(separator: ",")
  }
}

// MARK: - Files

private let streets = [
  "Avenida Paulista", "Rua Augusta", "Praça da Sé", "Rua Barão de Jaguara",
  "Avenida Presidente Vargas", "Rua XV de Novembro", "Travessa São João",
  "Alameda Santos", "Rua da Consolação", "Estrada do M'Boi Mirim",
]
private let complementos = [
  "", "", "", "lado par", "lado ímpar", "até 500", "de 501 ao fim, lado par",
  "de 612 a 1510 - lado par", "Bloco \"A\"", "",
]
private let bairros = [
  "Centro", "Bela Vista", "Sé", "Jardim Paulista", "Copacabana", "Savassi", "Boa Viagem",
  "Moinhos de Vento", "Asa Sul", "Pituba",
]
private let cities: [(String, String, String)] = [
  ("São Paulo", "SP", "3550308"), ("Rio de Janeiro", "RJ", "3304557"),
  ("Belo Horizonte", "MG", "3106200"), ("Porto Alegre", "RS", "4314902"),
  ("Brasília", "DF", "5300108"), ("Salvador", "BA", "2927408"), ("Recife", "PE", "2611606"),
  ("Campinas", "SP", "3509502"), ("Curitiba", "PR", "4106902"), ("Goiânia", "GO", "5208707"),
]

/// RFC 4180 quoting, only when needed.
func csvField(_ text: String) -> String {
  if text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
    return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }
  return text
}

/// A cep.is-shaped CSV (`/csv` columns) of about `megabytes` MB.
func generateCEPCSV(path: String, megabytes: Int) -> (bytes: Int, records: Int) {
  let writer = FileWriter(path)
  let target = megabytes * 1_000_000
  var written = 0
  var records = 0
  let header = "cep,logradouro,complemento,bairro,localidade,uf,ibge\n"
  writer.write(header)
  written += header.utf8.count
  records += 1
  var random = SplitMix64(state: 42)
  var value = syntheticLower
  while written < target {
    let r = Int(random.next() % 1_000_000)
    let city = cities[r % cities.count]
    let line =
      cepDigits(value) + "," + csvField("\(streets[r / 10 % streets.count]) \(r % 977)") + ","
      + csvField(complementos[r / 100 % complementos.count]) + ","
      + csvField(bairros[r / 1000 % bairros.count]) + "," + city.0 + "," + city.1 + ","
      + city.2 + "\n"
    writer.write(line)
    written += line.utf8.count
    records += 1
    value += 1 + r % 3
    if value > syntheticUpper { value = syntheticLower }
  }
  writer.close()
  return (written, records)
}

/// An `enrich` input: `id,nome,cep,observacao` with 30 % repeated and 5 % malformed CEPs.
func generateEnrichCSV(path: String, rows: Int) -> Int {
  let workload = MixedWorkload(count: rows, duplicateShare: 0.30, malformedShare: 0.05, seed: 7)
  let writer = FileWriter(path)
  writer.write("id,nome,cep,observacao\n")
  let names = [
    "Ana Souza", "João da Silva", "Maria José", "Pedro \"Pedrinho\" Lima", "Luíza, Ltda.",
  ]
  for (index, cep) in workload.inputs.enumerated() {
    let line =
      "\(index + 1)," + csvField(names[index % names.count]) + "," + csvField(cep) + ","
      + (index % 7 == 0 ? "\"entregar, se possível, pela manhã\"" : "") + "\n"
    writer.write(line)
  }
  writer.close()
  return workload.distinct.count
}

/// An `enrich` input of `rows` rows holding exactly `distinct` distinct valid CEPs, each at
/// least once, the repeats and about 2 % malformed CEPs spread at random through the file
/// (a seeded shuffle), in the spellings users type. Returns the distinct count.
func generateSpreadEnrichCSV(path: String, rows: Int, distinct: Int, seed: UInt64) -> Int {
  precondition(distinct <= rows && distinct <= syntheticUpper - syntheticLower + 1)
  var random = SplitMix64(state: seed)
  var values: [Int] = []
  values.reserveCapacity(distinct)
  var taken = Set<Int>()
  taken.reserveCapacity(distinct)
  while values.count < distinct {
    let value = syntheticLower + Int(random.next() % UInt64(syntheticUpper - syntheticLower + 1))
    if taken.insert(value).inserted { values.append(value) }
  }
  taken = []
  // Each slot is a CEP index (a first occurrence or a repeat) or -1 (malformed).
  let malformed = min(rows - distinct, rows / 50)
  var slots = Array(0..<distinct)
  slots.reserveCapacity(rows)
  for _ in 0..<malformed { slots.append(-1) }
  while slots.count < rows { slots.append(Int(random.next() % UInt64(distinct))) }
  for index in stride(from: slots.count - 1, to: 0, by: -1) {
    slots.swapAt(index, Int(random.next() % UInt64(index + 1)))
  }
  let writer = FileWriter(path)
  writer.write("id,nome,cep,observacao\n")
  let names = [
    "Ana Souza", "João da Silva", "Maria José", "Pedro \"Pedrinho\" Lima", "Luíza, Ltda.",
  ]
  for (index, slot) in slots.enumerated() {
    let cep =
      slot < 0
      ? malformedSamples[Int(random.next() % UInt64(malformedSamples.count))]
      : cepInput(values[slot], style: Int(random.next() % 4))
    let line =
      "\(index + 1)," + csvField(names[index % names.count]) + "," + csvField(cep) + ","
      + (index % 7 == 0 ? "\"entregar, se possível, pela manhã\"" : "") + "\n"
    writer.write(line)
  }
  writer.close()
  return distinct
}

// MARK: - Documents

private func cpfCheck(_ digits: [Int]) -> [Int] {
  var result = digits
  for length in [9, 10] {
    var sum = 0
    for index in 0..<length { sum += result[index] * (length + 1 - index) }
    let remainder = sum % 11
    result.append(remainder < 2 ? 0 : 11 - remainder)
  }
  return result
}

private func cnpjCheck(_ values: [Int]) -> [Int] {
  var result = values
  for length in [12, 13] {
    var sum = 0
    for index in 0..<length { sum += result[index] * ((length - 1 - index) % 8 + 2) }
    let remainder = sum % 11
    result.append(remainder < 2 ? 0 : 11 - remainder)
  }
  return result
}

/// Mixed CPF inputs: half valid (masked or not), half invalid of every kind.
func generateCPFs(count: Int, seed: UInt64) -> [String] {
  var random = SplitMix64(state: seed)
  var out: [String] = []
  for index in 0..<count {
    let base = (0..<9).map { _ in Int(random.next() % 10) }
    var digits = cpfCheck(base)
    var text: String
    switch index % 8 {
    case 0, 1, 2: break  // valid
    case 3: digits[10] = (digits[10] + 1) % 10  // wrong check digit
    case 4: digits[9] = (digits[9] + 3) % 10
    case 5: digits = Array(repeating: digits[0], count: 11)  // repeated
    case 6: digits.removeLast()  // too short
    default: break
    }
    text = digits.map(String.init).joined()
    if index % 8 == 7 { text = String(text.prefix(5)) + "x" + String(text.dropFirst(6)) }
    if index % 2 == 1 && text.count == 11 {
      let c = Array(text)
      text = "\(String(c[0..<3])).\(String(c[3..<6])).\(String(c[6..<9]))-\(String(c[9..<11]))"
    }
    out.append(text)
  }
  return out
}

/// Mixed CNPJ inputs: numeric and (1 in 8) alphanumeric, valid and invalid, masked or not.
func generateCNPJs(count: Int, seed: UInt64) -> [String] {
  var random = SplitMix64(state: seed)
  let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
  var out: [String] = []
  for index in 0..<count {
    let alphanumeric = index % 8 == 6
    let base: [UInt8] = (0..<12).map { _ in
      alphanumeric ? alphabet[Int(random.next() % 36)] : alphabet[Int(random.next() % 10)]
    }
    let checked = cnpjCheck(base.map { Int($0) - 48 })
    var bytes = base + checked[12...].map { UInt8(48 + $0) }
    switch index % 8 {
    case 3: bytes[13] = bytes[13] == 57 ? 48 : bytes[13] + 1
    case 4: bytes[12] = bytes[12] == 48 ? 57 : bytes[12] - 1
    case 5: bytes = Array(repeating: bytes[0], count: 14)
    case 7: bytes.removeLast()
    default: break
    }
    var text = String(decoding: bytes, as: UTF8.self)
    if index % 2 == 1 && bytes.count == 14 {
      let c = Array(text)
      text =
        "\(String(c[0..<2])).\(String(c[2..<5])).\(String(c[5..<8]))/\(String(c[8..<12]))-\(String(c[12..<14]))"
    }
    out.append(text)
  }
  return out
}

/// `count` rows, each a CEP string made as it is read, holding exactly `distinct` distinct
/// CEPs (every one of them in the first `distinct` rows, then picked at random): a stream's
/// input that costs no memory of its own.
struct GeneratedRows: AsyncSequence, Sendable {
  typealias Element = String
  let count: Int
  let distinct: Int

  func makeAsyncIterator() -> Iterator { Iterator(rows: self) }

  struct Iterator: AsyncIteratorProtocol {
    let rows: GeneratedRows
    var index = 0
    var random = SplitMix64(state: 30)

    mutating func next() async -> String? {
      guard index < rows.count else { return nil }
      defer { index += 1 }
      let pick = index < rows.distinct ? index : Int(random.next() % UInt64(rows.distinct))
      return cepDigits(syntheticLower + pick * 13)
    }
  }
}
