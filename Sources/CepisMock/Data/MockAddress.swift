import Foundation

/// One address, with the fields of a cep.is answer. Encodes to (and decodes from) the JSON of
/// `GET /{cep}`.
public struct MockAddress: Sendable, Hashable, Codable {
  /// The CEP, 8 digits, unmasked.
  public var cep: String
  /// The street (or square, avenue…).
  public var logradouro: String
  /// The complement, often empty (`lado ímpar`, `até 799/800`…).
  public var complemento: String
  /// The neighbourhood.
  public var bairro: String
  /// The city; empty marks a missing CEP in CSV answers.
  public var localidade: String
  /// The two-letter state code.
  public var uf: String
  /// The city's 7-digit IBGE code.
  public var ibge: String
  /// The coordinates, when known.
  public var geo: MockGeo?

  /// Creates an address.
  public init(
    cep: String, logradouro: String, complemento: String, bairro: String, localidade: String,
    uf: String, ibge: String, geo: MockGeo? = nil
  ) {
    self.cep = cep
    self.logradouro = logradouro
    self.complemento = complemento
    self.bairro = bairro
    self.localidade = localidade
    self.uf = uf
    self.ibge = ibge
    self.geo = geo
  }

  /// Decodes an address; missing text fields decode as empty.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    func text(_ key: CodingKeys) throws -> String {
      try container.decodeIfPresent(String.self, forKey: key) ?? ""
    }
    cep = try container.decode(String.self, forKey: .cep)
    logradouro = try text(.logradouro)
    complemento = try text(.complemento)
    bairro = try text(.bairro)
    localidade = try text(.localidade)
    uf = try text(.uf)
    ibge = try text(.ibge)
    geo = try container.decodeIfPresent(MockGeo.self, forKey: .geo)
  }
}

extension MockAddress {
  /// The CSV fields in the cep.is column order.
  var csvFields: [String] { [cep, logradouro, complemento, bairro, localidade, uf, ibge] }
}
