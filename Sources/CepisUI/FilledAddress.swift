import BrazilianDocuments

/// An address as the customer confirmed it in a form: the CEP's fields, checked, plus the
/// house number that no CEP database has.
///
/// ``AddressFormModel/address`` builds one from the form's fields once they are complete; it
/// is the value to submit (to an order, an invoice, a shipping quote).
///
/// ```swift
/// if let address = form.address {
///   order.ship(to: address.formattedCEP, address.logradouro, address.numero, address.uf.rawValue)
/// }
/// ```
///
/// Every text field is trimmed of surrounding whitespace; ``complemento`` may be empty, the
/// others never are.
public struct FilledAddress: Sendable, Hashable, Codable {
  /// The CEP, 8 digits, never masked (`"01001000"`).
  public var cep: String
  /// The street, avenue or square.
  public var logradouro: String
  /// The house or building number as the customer wrote it (`"1578"`, `"S/N"`, `"12-A"`).
  public var numero: String
  /// Apartment, block, floor or the Correios' own complement; possibly empty.
  public var complemento: String
  /// The neighbourhood.
  public var bairro: String
  /// The town or city.
  public var localidade: String
  /// The federative unit.
  public var uf: UF
  /// The IBGE code of the municipality (`"3550308"`) when the city and UF are still the ones
  /// the CEP lookup found; `nil` when the customer typed them by hand or nothing was found.
  public var ibge: String?

  /// Creates an address.
  public init(
    cep: String, logradouro: String, numero: String, complemento: String = "",
    bairro: String, localidade: String, uf: UF, ibge: String? = nil
  ) {
    self.cep = cep
    self.logradouro = logradouro
    self.numero = numero
    self.complemento = complemento
    self.bairro = bairro
    self.localidade = localidade
    self.uf = uf
    self.ibge = ibge
  }

  /// The CEP masked as people write it: `"01001-000"`.
  public var formattedCEP: String {
    guard cep.utf8.count == 8 else { return cep }
    return "\(cep.prefix(5))-\(cep.suffix(3))"
  }
}
