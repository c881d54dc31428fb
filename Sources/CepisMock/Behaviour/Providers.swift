import BrazilianDocuments
import CepisSupport

/// The answers of the two public fallback providers, ViaCEP and BrasilAPI (CEP v2), built
/// from the same dataset as the cep.is routes and shaped as those services shape them.
enum Providers {
  /// The DDD (area code) of each state's capital, for ViaCEP's `ddd` field.
  static let capitalDDD: [String: String] = [
    "AC": "68", "AL": "82", "AP": "96", "AM": "92", "BA": "71", "CE": "85", "DF": "61",
    "ES": "27", "GO": "62", "MA": "98", "MT": "65", "MS": "67", "MG": "31", "PA": "91",
    "PB": "83", "PR": "41", "PE": "81", "PI": "86", "RJ": "21", "RN": "84", "RS": "51",
    "RO": "69", "RR": "95", "SC": "48", "SP": "11", "SE": "79", "TO": "63",
  ]

  /// ViaCEP's answer for an address: the CEP masked, the state's name and region spelled
  /// out, `ddd` from the capital; `unidade`, `gia` and `siafi` empty (the dataset has none).
  static func viaCEPJSON(_ address: MockAddress) -> [UInt8] {
    let uf = UF(rawValue: address.uf)
    return jsonObject([
      "cep": .string(maskedCEP(address.cep)), "logradouro": .string(address.logradouro),
      "complemento": .string(address.complemento), "unidade": .string(""),
      "bairro": .string(address.bairro), "localidade": .string(address.localidade),
      "uf": .string(address.uf), "estado": .string(uf?.name ?? ""),
      "regiao": .string(uf?.region.name ?? ""), "ibge": .string(address.ibge),
      "gia": .string(""), "ddd": .string(capitalDDD[address.uf] ?? ""), "siafi": .string(""),
    ])
  }

  /// ViaCEP's "not found": HTTP 200 with `{"erro": "true"}` (or the older boolean form).
  static func viaCEPErro(boolean: Bool) -> [UInt8] {
    jsonObject(["erro": boolean ? .bool(true) : .string("true")])
  }

  /// ViaCEP's answer to a malformed CEP: HTTP 400 with an HTML page.
  static let viaCEPBadRequestHTML = Array(
    """
    <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN">
    <html><head><title>ViaCEP 400</title></head>
    <body><h2>Http 400</h2><h3>Verifique a sua URL (Bad Request)</h3></body></html>

    """.utf8)

  /// BrasilAPI's CEP v2 answer: `cep` unmasked, `location.coordinates` with latitude and
  /// longitude as strings, or `{}` when the address has no point.
  static func brasilAPIJSON(_ address: MockAddress) -> [UInt8] {
    let coordinates: JSONValue
    if let geo = address.geo {
      coordinates = [
        "longitude": .string(String(geo.lon)), "latitude": .string(String(geo.lat)),
      ]
    } else {
      coordinates = .object([])
    }
    return jsonObject([
      "cep": .string(address.cep), "state": .string(address.uf),
      "city": .string(address.localidade), "neighborhood": .string(address.bairro),
      "street": .string(address.logradouro), "service": .string("open-cep"),
      "location": ["type": .string("Point"), "coordinates": coordinates],
    ])
  }

  /// BrasilAPI's 404 for a CEP that no upstream service knows.
  static let brasilAPINotFoundBody = serviceError([
    ("CEP NAO ENCONTRADO", "correios"),
    ("CEP não encontrado na base do ViaCEP.", "viacep"),
    ("CEP não encontrado na base do WideNet.", "widenet"),
    ("CEP INVÁLIDO", "correios-alt"),
  ])

  /// BrasilAPI's 404 when its upstream services are down (the CEP may well exist).
  static let brasilAPIOutageBody = serviceError([
    ("A autenticacao de null falhou!", "correios"),
    ("Erro ao se conectar com o serviço ViaCEP.", "viacep"),
    ("CEP não encontrado na base do WideNet.", "widenet"),
  ])

  /// BrasilAPI's 500 when the v2 geocoder answers something that is not JSON.
  static let brasilAPIInvalidJSONBody = jsonObject([
    "message": .string(
      "invalid json response body at https://nominatim.openstreetmap.org/search?format=json"
        + " reason: Unexpected token < in JSON at position 0"),
    "type": .string("invalid-json"),
  ])

  /// BrasilAPI's 400 for a CEP that is not 8 digits.
  static let brasilAPIValidationBody = jsonObject([
    "name": .string("CepPromiseError"),
    "message": .string("CEP deve conter exatamente 8 caracteres."),
    "type": .string("validation_error"),
    "errors": [
      [
        "message": .string("CEP informado possui mais ou menos do que 8 caracteres."),
        "service": .string("cep_validation"),
      ]
    ],
  ])

  private static func serviceError(_ errors: [(String, String)]) -> [UInt8] {
    let entries = errors.map { message, service -> JSONValue in
      [
        "name": .string("ServiceError"), "message": .string(message),
        "service": .string(service),
      ]
    }
    return jsonObject([
      "name": .string("CepPromiseError"),
      "message": .string("Todos os serviços de CEP retornaram erro."),
      "type": .string("service_error"), "errors": .array(entries),
    ])
  }
}
