import Foundation
import Testing

@testable import Cepis

@Suite("Address, Geo and Health decoding")
struct DecodingTests {
  func address(_ json: String) throws -> Address {
    try JSONDecoder().decode(Address.self, from: Data(json.utf8))
  }

  @Test("the documented shape")
  func documentedShape() throws {
    let value = try address(
      """
      {"cep":"01310100","logradouro":"Avenida Paulista","complemento":"de 612 a 1510 - lado par",
       "bairro":"Bela Vista","localidade":"São Paulo","uf":"SP","ibge":"3550308",
       "geo":{"lat":-23.5613,"lon":-46.6565,"raio_m":150,"precisao":"logradouro"}}
      """)
    #expect(value.formattedCEP == "01310-100")
    #expect(value.localidade == "São Paulo")
    #expect(value.geo == Geo(lat: -23.5613, lon: -46.6565, raioM: 150, precisao: "logradouro"))
    #expect(value.geo?.isPrecise == true)
  }

  @Test("tolerates drift: masked cep, numbers for strings, missing and null fields, decimal radius")
  func drift() throws {
    let value = try address(
      """
      {"cep":"01310-100","ibge":3550308,"uf":"SP","bairro":null,"extra":{"x":1},
       "geo":{"lat":"-23.5","lon":-46.6,"raio_m":149.6,"precisao":"localidade"}}
      """)
    #expect(value.cep == "01310100")
    #expect(value.ibge == "3550308")
    #expect(value.bairro == "")
    #expect(value.logradouro == "")
    #expect(value.geo?.raioM == 150)
    #expect(value.geo?.isPrecise == false)
    #expect(try address(#"{"cep":"01310100","geo":null}"#).geo == nil)
  }

  @Test(
    "rejects JSON of another shape",
    arguments: [
      #"{"results":[],"error":null}"#, #"{"cep":"123"}"#, #"[]"#, #"{"cep":{"a":1}}"#,
      #"{"cep":"01310100","logradouro":["a"]}"#, #"{"cep":"01310100","geo":{"lat":1}}"#,
    ])
  func rejectsWrongShape(json: String) {
    #expect(throws: (any Error).self) { try address(json) }
  }

  @Test("round-trips through Codable with the API's field names")
  func roundTrip() throws {
    let original = Address(
      cep: "01001000", logradouro: "Praça da Sé", bairro: "Sé", localidade: "São Paulo",
      uf: "SP", ibge: "3550308", geo: Geo(lat: -23.55, lon: -46.63, raioM: 10, precisao: "x"))
    let data = try JSONEncoder().encode(original)
    #expect(String(decoding: data, as: UTF8.self).contains("\"raio_m\""))
    #expect(try JSONDecoder().decode(Address.self, from: data) == original)
  }

  @Test("health: documented, degraded, drifted and wrong shapes")
  func health() throws {
    let ok = try JSONDecoder().decode(
      Health.self,
      from: Data(
        #"{"ok":true,"status":"ok","dne":"2026-11","ceps":1234567,"base_gerada_em":"2026-11-15"}"#
          .utf8))
    #expect(
      ok
        == Health(
          ok: true, status: "ok", dne: "2026-11", ceps: 1_234_567, baseGeradaEm: "2026-11-15"))
    let degraded = try JSONDecoder().decode(
      Health.self, from: Data(#"{"ok":"false","ceps":"12"}"#.utf8))
    #expect(!degraded.ok)
    #expect(degraded.status == "degraded")
    #expect(degraded.ceps == 12)
    #expect(throws: (any Error).self) {
      try JSONDecoder().decode(Health.self, from: Data(#"{"hello":"world"}"#.utf8))
    }
  }
}
