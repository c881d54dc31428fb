import Foundation
import Testing

@testable import Cepis
@testable import CepisHTTP

/// The pure half of fallbacks: how each service's answer is read. What crosses the network
/// is in `FallbackEndToEndTests`.
@Suite("fallback answers and Address.source")
struct FallbackDecodingTests {
  let via = Fallback.viaCEP()
  let brasil = Fallback.brasilAPI()

  func response(_ status: Int, _ body: String, type: String? = "application/json; charset=utf-8")
    -> HTTPResponse
  {
    HTTPResponse(
      status: status, headers: type.map { ["content-type": $0] } ?? [:], body: Data(body.utf8))
  }

  func isFailure(_ outcome: FallbackOutcome) -> Bool {
    if case .failed = outcome { return true }
    return false
  }

  // MARK: ViaCEP

  @Test("ViaCEP's answer maps field by field, the masked CEP normalised, no geo")
  func viaCEPAnswer() {
    let body = """
      {"cep":"01001-000","logradouro":"Praça da Sé","complemento":"lado ímpar","unidade":"",
       "bairro":"Sé","localidade":"São Paulo","uf":"SP","estado":"São Paulo","regiao":"Sudeste",
       "ibge":"3550308","gia":"1004","ddd":"11","siafi":"7107"}
      """
    let expected = Address(
      cep: "01001000", logradouro: "Praça da Sé", complemento: "lado ímpar", bairro: "Sé",
      localidade: "São Paulo", uf: "SP", ibge: "3550308", geo: nil, source: .viaCEP)
    #expect(via.interpret(response(200, body), cep: "01001000") == .found(expected))
  }

  @Test(
    "ViaCEP's erro in every form it has used is not found",
    arguments: [#"{"erro":true}"#, #"{"erro":"true"}"#, #"{"erro": "True"}"#, #"{"erro":1}"#])
  func viaCEPErro(body: String) {
    #expect(via.interpret(response(200, body), cep: "99999999") == .notFound)
  }

  @Test(
    "ViaCEP answers that are not an address for the CEP asked are failures",
    arguments: [
      (200, #"{"cep":"20040-020","localidade":"Rio de Janeiro","uf":"RJ"}"#),  // another CEP
      (200, #"{"erro":"false"}"#),  // no erro, no address
      (200, "{}"), (200, #"{"results":[],"error":null}"#), (200, "[]"), (200, "not json"),
      (200, #"{"cep":"01001-000","localidade":"São Paulo"}"#),  // no uf
      (200, #"{"cep":"01001-000","localidade":{"x":1},"uf":"SP"}"#),
      (400, "Http 400"), (404, #"{"erro":"true"}"#), (500, #"{"erro":"true"}"#),
      (429, ""),
    ])
  func viaCEPFailures(status: Int, body: String) {
    #expect(isFailure(via.interpret(response(status, body), cep: "01001000")))
  }

  @Test("an HTML page or another content type is a failure, whatever its status")
  func notJSON() {
    let page = response(200, "<html><body>Login</body></html>", type: "text/html")
    #expect(isFailure(via.interpret(page, cep: "01001000")))
    let xml = response(200, #"{"erro":"true"}"#, type: "application/xml")
    #expect(isFailure(via.interpret(xml, cep: "01001000")))
    #expect(isFailure(brasil.interpret(page, cep: "01001000")))
    // No content type at all: the body decides.
    let bare = response(200, #"{"erro":"true"}"#, type: nil)
    #expect(via.interpret(bare, cep: "01001000") == .notFound)
  }

  // MARK: BrasilAPI

  func brasilBody(_ coordinates: String) -> String {
    #"{"cep":"01001000","state":"SP","city":"São Paulo","neighborhood":"Sé","#
      + #""street":"Praça da Sé","service":"open-cep","location":{"type":"Point","#
      + #""coordinates":\#(coordinates)}}"#
  }

  @Test("BrasilAPI's answer maps, with string coordinates as a point of unknown precision")
  func brasilAPIAnswer() throws {
    let body = brasilBody(#"{"longitude":"-46.6339347","latitude":"-23.5503099"}"#)
    guard case .found(let address) = brasil.interpret(response(200, body), cep: "01001000")
    else {
      Issue.record("not found")
      return
    }
    #expect(
      address
        == Address(
          cep: "01001000", logradouro: "Praça da Sé", complemento: "", bairro: "Sé",
          localidade: "São Paulo", uf: "SP", ibge: "",
          geo: Geo(lat: -23.5503099, lon: -46.6339347, raioM: 0, precisao: ""),
          source: .brasilAPI))
    #expect(address.geo?.isPrecise == false)
  }

  @Test(
    "BrasilAPI without a usable point gives no geo, and is still an answer",
    arguments: [
      "{}", #"{"longitude":"","latitude":""}"#, #"{"longitude":null,"latitude":null}"#,
      #"{"longitude":"undefined","latitude":"undefined"}"#, #"{"longitude":"-46.6"}"#,
      #"{"longitude":"-46.6","latitude":"-123.5"}"#, "null", #""none""#,
    ])
  func brasilAPINoPoint(coordinates: String) throws {
    let outcome = brasil.interpret(response(200, brasilBody(coordinates)), cep: "01001000")
    guard case .found(let address) = outcome else {
      Issue.record("\(outcome)")
      return
    }
    #expect(address.geo == nil)
    #expect(address.logradouro == "Praça da Sé")
  }

  @Test("BrasilAPI coordinates as numbers are read too")
  func brasilAPINumericPoint() {
    let body = brasilBody(#"{"longitude":-46.6,"latitude":-23.5}"#)
    guard case .found(let address) = brasil.interpret(response(200, body), cep: "01001000")
    else {
      Issue.record("not found")
      return
    }
    #expect(address.geo == Geo(lat: -23.5, lon: -46.6, raioM: 0, precisao: ""))
  }

  static let notFoundReports = [
    // The shapes BrasilAPI sends when no upstream service knows the CEP.
    #"{"name":"CepPromiseError","message":"Todos os serviços de CEP retornaram erro.","#
      + #""type":"service_error","errors":[{"name":"ServiceError","message":"CEP INVÁLIDO","#
      + #""service":"correios"},{"name":"ServiceError","#
      + #""message":"CEP não encontrado na base do ViaCEP.","service":"viacep"}]}"#,
    #"{"type":"service_error","errors":[{"message":"CEP NAO ENCONTRADO","service":"correios"}]}"#,
    #"{"type":"service_error","errors":[{"message":"cep invalido"},{"message":"Não Encontrado"}]}"#,
  ]

  @Test(
    "a 404 whose every error says not found or invalid CEP is not found",
    arguments: notFoundReports)
  func brasilAPINotFound(body: String) {
    #expect(brasil.interpret(response(404, body), cep: "99999999") == .notFound)
  }

  static let outageReports = [
    // Its upstreams down: the CEP may exist.
    #"{"type":"service_error","errors":[{"message":"A autenticacao de null falhou!","#
      + #""service":"correios"},{"message":"Erro ao se conectar com o serviço ViaCEP.","#
      + #""service":"viacep"}]}"#,
    // Mixed: one upstream says not found, another could not be asked.
    #"{"type":"service_error","errors":[{"message":"CEP NAO ENCONTRADO"},"#
      + #"{"message":"Erro ao se conectar com o serviço WideNet."}]}"#,
    #"{"type":"service_error","errors":[]}"#, #"{"type":"service_error"}"#,
    #"{"type":"service_error","errors":[{"service":"correios"}]}"#,
    #"{"type":"validation_error","errors":[{"message":"CEP não encontrado"}]}"#,
    #"{"message":"not found"}"#, "Not Found", "",
  ]

  @Test("any other 404 is an outage: a failure, never not found", arguments: outageReports)
  func brasilAPIOutage(body: String) {
    #expect(isFailure(brasil.interpret(response(404, body), cep: "01001000")))
  }

  @Test(
    "BrasilAPI's 5xx, 429, 400 and wrong shapes are failures",
    arguments: [
      (500, #"{"message":"invalid json response body at …","type":"invalid-json"}"#),
      (502, ""), (429, "{}"), (400, #"{"type":"validation_error"}"#), (200, "{}"),
      (200, #"{"cep":"01001000"}"#), (200, #"{"cep":"20040020","state":"RJ","city":"Rio"}"#),
    ])
  func brasilAPIFailures(status: Int, body: String) {
    #expect(isFailure(brasil.interpret(response(status, body), cep: "01001000")))
  }

  // MARK: Fallback values

  @Test("URLs: the documented paths under a base without trailing slashes, prefix kept")
  func paths() throws {
    let base = try #require(URL(string: "http://127.0.0.1:8080/proxy//"))
    let viaRequest = Fallback.viaCEP(baseURL: base).request(
      for: "01001000", userAgent: "ua")
    #expect(viaRequest?.url.absoluteString == "http://127.0.0.1:8080/proxy/ws/01001000/json/")
    #expect(viaRequest?.header("user-agent") == "ua")
    let brasilRequest = Fallback.brasilAPI(baseURL: base).request(
      for: "01001000", userAgent: "ua")
    #expect(brasilRequest?.url.absoluteString == "http://127.0.0.1:8080/proxy/api/cep/v2/01001000")
    #expect(Fallback.viaCEP().baseURL.absoluteString == "https://viacep.com.br")
    #expect(Fallback.brasilAPI().baseURL.absoluteString == "https://brasilapi.com.br")
    #expect(Fallback.viaCEP(baseURL: base) == Fallback.viaCEP(baseURL: base))
    #expect(Fallback.viaCEP(baseURL: base) != Fallback.brasilAPI(baseURL: base))
    #expect("\(Fallback.viaCEP())" == "ViaCEP (https://viacep.com.br)")
  }

  @Test("Client keeps its fallbacks; hedgeAfter is clamped to a usable delay")
  func clientSettings() {
    #expect(Client().fallbacks.isEmpty)
    #expect(Client().hedgeAfter == nil)
    let client = Client(fallbacks: [.viaCEP(), .brasilAPI()], hedgeAfter: -1)
    #expect(client.fallbacks.map(\.source) == [.viaCEP, .brasilAPI])
    #expect(client.hedgeAfter == 0)
    #expect(Client(hedgeAfter: 0.25).hedgeAfter == 0.25)
    #expect(Client(hedgeAfter: .nan).hedgeAfter == nil)
    #expect(Client(hedgeAfter: .infinity).hedgeAfter == 86_400)
  }

  // MARK: Address.source

  @Test("a cep.is answer has no source key and decodes as cep.is")
  func sourceDefaultsToCepis() throws {
    let json = #"{"cep":"01001000","localidade":"São Paulo","uf":"SP"}"#
    let address = try JSONDecoder().decode(Address.self, from: Data(json.utf8))
    #expect(address.source == .cepis)
    #expect(Address(cep: "01001000").source == .cepis)
  }

  @Test(
    "encoding then decoding gives an equal address, whatever its source",
    arguments: AddressSource.allCases)
  func roundTrip(source: AddressSource) throws {
    let original = Address(
      cep: "01001000", logradouro: "Praça da Sé", complemento: "lado ímpar", bairro: "Sé",
      localidade: "São Paulo", uf: "SP", ibge: "3550308",
      geo: Geo(lat: -23.55, lon: -46.63, raioM: 0, precisao: ""), source: source)
    let data = try JSONEncoder().encode(original)
    let text = String(decoding: data, as: UTF8.self)
    #expect(text.contains(#""source":"\#(source.rawValue)""#))
    #expect(try JSONDecoder().decode(Address.self, from: data) == original)
  }

  @Test("equality includes the source; an unknown source is a decoding error")
  func equalityAndUnknownSource() {
    let cepis = Address(cep: "01001000", localidade: "São Paulo", uf: "SP")
    var via = cepis
    via.source = .viaCEP
    #expect(cepis != via)
    #expect(Set([cepis, via]).count == 2)
    #expect(throws: DecodingError.self) {
      try JSONDecoder().decode(Address.self, from: Data(#"{"cep":"01001000","source":"x"}"#.utf8))
    }
  }

  @Test("a body from cep.is itself is cep.is's, whatever `source` it carries")
  func cepisBodyIgnoresSource() throws {
    let decoder = JSONDecoder()
    decoder.userInfo[Address.fromCepisKey] = true
    for json in [#"{"cep":"01001000","source":"viaCEP"}"#, #"{"cep":"01001000","source":"dne"}"#] {
      #expect(try decoder.decode(Address.self, from: Data(json.utf8)).source == .cepis)
    }
  }

  @Test("AddressSource names: raw values for data, descriptions for people")
  func sourceNames() {
    #expect(AddressSource.allCases.map(\.rawValue) == ["cepis", "viaCEP", "brasilAPI"])
    #expect(AddressSource.allCases.map(\.description) == ["cep.is", "ViaCEP", "BrasilAPI"])
  }
}
