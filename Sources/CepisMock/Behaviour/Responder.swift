import CepisSupport
import Foundation

/// Builds the normal answer of every route from the dataset, before the faults that replace
/// it: cep.is's `/{cep}`, `/health` and `/csv`, cpfhub.io's `/cpf/{cpf}` and the fallback
/// providers' shapes.
///
/// It owns the `/csv` answers kept for sending again (see
/// ``MockServer/Configuration/keptCSVAnswerBytes``); everything else it reads is immutable.
final class Responder: Sendable {
  /// The addresses and people served.
  let dataset: MockDataset
  /// How many CEPs exist (for `/health`'s `ceps`), counted once.
  let datasetCount: Int
  /// The accepted `x-api-key` values of the cpfhub.io routes.
  let cpfAPIKeys: Set<String>
  /// The most bytes of `/csv` answers kept (0: none).
  let keptCSVAnswerBytes: Int
  /// The `/csv` answers kept by query string, and their bytes in all.
  let keptCSVAnswers = LockedValue((answers: [String: [UInt8]](), bytes: 0))

  init(configuration: MockServer.Configuration) {
    dataset = configuration.dataset
    datasetCount = configuration.dataset.count
    cpfAPIKeys = configuration.cpfAPIKeys
    keptCSVAnswerBytes = configuration.keptCSVAnswerBytes
  }

  func json(_ status: Int, _ body: [UInt8]) -> Response {
    Response(status: status, contentType: jsonType, body: .bytes(body))
  }

  func message(_ status: Int, _ text: String) -> Response {
    json(status, jsonObject(["mensagem": .string(text)]))
  }

  /// The normal answer (before faults other than the CSV and provider ones) of a request on a
  /// route; the control routes are the ``RequestLedger``'s.
  ///
  /// - Parameters:
  ///   - faults: The request's faults; only the CSV and provider ones are read here.
  ///   - degraded: Whether `/health` is degraded.
  ///   - edition: The DNE edition `/health` names.
  func answer(
    _ request: MockHTTPRequest, target: Target, faults: [MockFault], degraded: Bool,
    edition: String
  ) -> Response {
    guard target != .unknown else { return message(404, "Rota não encontrada") }
    guard request.method == "GET" || request.method == "HEAD" else {
      var response = message(405, "Método não permitido")
      response.headers.append(("Allow", "GET, HEAD"))
      return response
    }
    switch target {
    case .cep(let text):
      guard let value = cepValue(text) else { return message(400, "CEP inválido: \(text)") }
      guard let address = dataset.address(forValue: value) else {
        return message(404, "CEP não encontrado")
      }
      return json(200, addressJSON(address))
    case .csv:
      return csv(request, faults: Set(faults.filter(\.isCSVOnly)))
    case .health:
      return json(
        degraded ? 503 : 200,
        jsonObject([
          "ok": .bool(!degraded), "status": .string(degraded ? "degraded" : "ok"),
          "dne": .string(edition), "ceps": .int(datasetCount),
          "base_gerada_em": .string("2026-11-15T03:00:00Z"),
        ]))
    case .cpf(let cpf):
      return cpfAnswer(cpf, request: request)
    case .viaCEP(let text):
      return viaCEPAnswer(text, booleanErro: faults.contains(.viaCEPBooleanErro))
    case .brasilAPI(let text):
      return brasilAPIAnswer(text)
    case .control, .unknown:
      return message(404, "Rota não encontrada")
    }
  }
}

/// The cep.is JSON of an address (`GET /{cep}`).
func addressJSON(_ address: MockAddress) -> [UInt8] {
  var pairs: [(String, JSONValue)] = [
    ("cep", .string(address.cep)), ("logradouro", .string(address.logradouro)),
    ("complemento", .string(address.complemento)), ("bairro", .string(address.bairro)),
    ("localidade", .string(address.localidade)), ("uf", .string(address.uf)),
    ("ibge", .string(address.ibge)),
  ]
  if let point = address.geo {
    pairs.append(
      (
        "geo",
        [
          "lat": .double(point.lat), "lon": .double(point.lon), "raio_m": .int(point.raioM),
          "precisao": .string(point.precisao),
        ]
      ))
  }
  var out: [UInt8] = []
  out.reserveCapacity(320)
  JSONValue.object(pairs).append(to: &out)
  return out
}
