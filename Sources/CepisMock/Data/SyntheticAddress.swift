import CepisSupport

/// The generated addresses of the synthetic range.
enum SyntheticAddress {
  static let complementos = [
    "", "lado par", "lado ímpar", "até 500", "de 501 ao fim, lado par", "", "", "", "", "",
  ]

  static func address(_ value: Int) -> MockAddress {
    MockAddress(
      cep: cepString(value), logradouro: "Rua Sintética \(value / 10)",
      complemento: complementos[value % 10], bairro: "Bairro Sintético \(value / 1000 % 1000)",
      localidade: "São Paulo", uf: "SP", ibge: "3550308", geo: geo(value))
  }

  static func geo(_ value: Int) -> MockGeo? {
    switch value % 3 {
    case 0:
      return MockGeo(
        lat: -23.5 - Double(value % 1000) / 10_000,
        lon: -46.6 - Double(value / 1000 % 1000) / 10_000,
        raioM: 100 + value % 7 * 10, precisao: "logradouro")
    case 1:
      return MockGeo(lat: -23.5505, lon: -46.6333, raioM: 25_000, precisao: "localidade")
    default:
      return nil
    }
  }

  private static let streetPrefix = Array("Rua Sintética ".utf8)
  private static let bairroPrefix = Array(",Bairro Sintético ".utf8)
  private static let suffix = Array(",São Paulo,SP,3550308".utf8)
  private static let csvComplementos: [[UInt8]] = complementos.map { text in
    var bytes: [UInt8] = []
    CSVField.append(text, to: &bytes)
    return bytes
  }

  /// Appends the CSV row (default columns, no line ending) of the synthetic CEP `value`,
  /// without going through `String`.
  static func appendCSVRow(_ value: Int, cepMasked: Bool, to out: inout [UInt8]) {
    appendCEP(value, masked: cepMasked, to: &out)
    out.append(UInt8(ascii: ","))
    out.append(contentsOf: streetPrefix)
    appendDecimal(value / 10, to: &out)
    out.append(UInt8(ascii: ","))
    out.append(contentsOf: csvComplementos[value % 10])
    out.append(contentsOf: bairroPrefix)
    appendDecimal(value / 1000 % 1000, to: &out)
    out.append(contentsOf: suffix)
  }
}
